// Control: the status, pause and resume, and deleting an app or a time range, each through
// the library call the CLI makes (the audit trail records it, origin "api").

import { change, read } from "./api.js";
import { el } from "./dom.js";
import { confirmDelete } from "./confirm.js";

export async function showControl(main, go) {
  const status = await read("/api/status");
  const note = el("p", { class: "note", id: "control-note", role: "status" });
  const daemon = status.daemon;
  const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
  const rows = [
    ["Daemon", daemon.state + (daemon.pid ? ` (pid ${daemon.pid})` : "")],
    ["Capture", status.capture],
    ["Storage", `${mb(status.total_bytes)} of a ${status.storage_cap_mb} MB cap`],
    ["Frames", `${status.frames.toLocaleString()} (${status.oldest || "–"} → ${status.newest || "–"})`],
    ["Encryption", `text ${status.encrypt_text ? "on" : "off"}, thumbnails ${status.encrypt_thumbnails ? "on" : "off"}` + (status.key_store ? `; key in the ${status.key_store}` : "") + (status.key_problem ? `; ${status.key_problem}` : "")],
    ["Retention", `${status.retention_days} days`],
    ["Meaning", status.meaning],
    ["Views", status.views_lag ? `${status.views_lag} event(s) behind: ${status.views_behind_why}` : "up to date"],
  ];
  const table = el("dl", { class: "status", id: "status" }, ...rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { "data-field": k.toLowerCase(), text: v })]));
  const duration = el("input", { name: "duration", id: "pause-for", placeholder: "30m, 2h (empty: until resumed)", "aria-label": "Pause for" });
  const paused = status.capture !== "active";
  const pause = el("form", { class: "row", id: "pause-form" }, duration, el("button", { id: "pause", text: "Pause capture" }));
  const resume = el("button", { type: "button", id: "resume", text: "Resume capture", disabled: !paused });
  pause.addEventListener("submit", async (event) => {
    event.preventDefault();
    await act(note, async () => {
      const done = await change("/api/pause", duration.value.trim() ? { duration: duration.value.trim() } : {});
      return `Capture paused ${done.until ? `until ${done.until.slice(11, 16)}` : "until resumed"}.`;
    }, go);
  });
  resume.addEventListener("click", () => act(note, async () => {
    await change("/api/resume");
    return "Capture resumed.";
  }, go));
  const since = el("input", { name: "since", id: "delete-since", placeholder: "since: 2h, yesterday …", "aria-label": "Delete since" });
  const until = el("input", { name: "until", id: "delete-until", placeholder: "until", "aria-label": "Delete until" });
  const app = el("input", { name: "app", id: "delete-app", placeholder: "app, title or site", "aria-label": "Delete app" });
  const remove = el("form", { class: "row", id: "delete-form" }, since, until, app, el("button", { class: "danger", id: "delete", text: "Delete…" }));
  remove.addEventListener("submit", async (event) => {
    event.preventDefault();
    const scope = { since: since.value.trim(), until: until.value.trim(), app: app.value.trim() };
    for (const key of Object.keys(scope)) if (!scope[key]) delete scope[key];
    if (!Object.keys(scope).length) {
      note.textContent = "Name what goes: a time range, an app, or both (everything is deleted with `backscroll clear`).";
      return;
    }
    const what = [scope.since && `since ${scope.since}`, scope.until && `until ${scope.until}`, scope.app && `whose app, title or address contains “${scope.app}”`].filter(Boolean).join(", ");
    if (!(await confirmDelete(`Delete every frame ${what}? This cannot be undone.`))) return;
    await act(note, async () => {
      const done = await change("/api/delete", { ...scope, confirm: true });
      return `Deleted ${done.deleted} frame(s).`;
    }, go);
  });
  main.append(
    el("h1", { text: "Control" }),
    note,
    table,
    el("h2", { text: "Capture" }), pause, resume,
    el("h2", { text: "Delete" }), el("p", { text: "Frames in a time range, of an app, or both. Delete a frame or a moment from the timeline." }), remove,
  );
  return () => {};
}

async function act(note, work, go) {
  try {
    const said = await work();
    await go("/control", { replace: true });
    document.getElementById("control-note").textContent = said;
  } catch (error) {
    note.textContent = error.message;
  }
}
