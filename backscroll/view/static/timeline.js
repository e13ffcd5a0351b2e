// The timeline: one day at a time. The hours as a strip coloured by app, the day's moments
// as thumbnails, a scrubber (mouse, or the arrow keys frame by frame; PageUp/PageDown or
// [ and ] for the day before or after), a time phrase box (the --since parser), and the
// frame large with its text. Today's newest end follows new frames as the daemon records.

import { change, read, thumbnail } from "./api.js";
import { clear, clock, colour, day as dayOf, el, redactedText } from "./dom.js";
import { confirmDelete } from "./confirm.js";

const DAY_LIMIT = 10000; // the timeline request's most frames
const FOLLOW_MS = 1000; // today's newest end: asked for every second
const FOLLOW_LIMIT = 50;
const IDLE_US = 5 * 60 * 1000; // a frame's colour runs to the next frame, at most 5 minutes
const AHEAD = 4; // thumbnails loaded and decoded ahead of the scrubber, each way
const KEPT = 64; // pictures kept decoded (a few kB each, as a thumbnail is 480 wide)
const FIRST_MOMENTS = 40; // moments drawn each way of the one shown before the day's first paint
const TEXT_AFTER_MS = 60; // a frame's text is asked for once scrubbing rests this long

export async function showTimeline(main, { day, frame, at }, go) {
  let wanted = frame;
  if (frame !== null) {
    const shown = await read(`/api/frame/${frame}`);
    day = dayOf(shown.time);
  }
  if (day === null) day = dayOf((await read("/api/timeline", { since: "today", limit: 1 })).start);
  const answer = await read("/api/timeline", { since: day, limit: DAY_LIMIT });
  // A day of more frames than a page holds comes in more pages, each after the last.
  for (let next = answer.next_cursor; next; ) {
    const page = await read("/api/timeline", { since: day, limit: DAY_LIMIT, cursor: next });
    answer.frames.push(...page.frames);
    next = page.next_cursor;
  }
  const frames = answer.frames;
  const view = new Timeline(main, day, answer, go);
  if (wanted === null && at) wanted = (frames.find((f) => f.time >= at) || frames.at(-1) || {}).id ?? null;
  view.select(wanted === null ? frames.length - 1 : Math.max(0, frames.findIndex((f) => f.id === wanted)), { address: frame === null });
  // When the day is on screen: the bench (bench/view.py) reads these marks.
  performance.mark("timeline-drawn");
  requestAnimationFrame(() => setTimeout(() => performance.mark("timeline-painted")));
  return () => view.leave();
}

class Timeline {
  constructor(main, day, answer, go) {
    this.main = main;
    this.day = day;
    this.frames = answer.frames;
    this.go = go;
    this.index = -1;
    this.cache = new Map();
    this.shownText = 0;
    const next = shiftDay(day, 1);
    const before = shiftDay(day, -1);
    this.scrub = el("input", { type: "range", id: "scrub", min: 0, max: Math.max(0, this.frames.length - 1), value: 0, "aria-label": "Frames of the day", disabled: !this.frames.length });
    this.scrub.addEventListener("input", () => this.select(Number(this.scrub.value)));
    this.hours = el("div", { class: "hours", id: "hours", role: "img", "aria-label": "Hours of the day, coloured by app" });
    this.moments = el("ol", { class: "moments", id: "moments" });
    this.pane = el("section", { class: "frame", id: "frame", "aria-live": "polite" });
    const phrase = el("input", { name: "when", id: "when", placeholder: "tuesday afternoon, yesterday, 2h …", "aria-label": "Go to a time", autocomplete: "off" });
    const jump = el("form", { class: "when", id: "jump" }, phrase, el("button", { text: "Go" }));
    jump.addEventListener("submit", (event) => {
      event.preventDefault();
      this.jump(phrase.value.trim());
    });
    this.note = el("p", { class: "note", id: "note", role: "status" });
    main.append(
      el("div", { class: "dayline" },
        el("a", { href: `/day/${before}`, id: "previous-day", title: "Previous day (PageUp or [)", text: `‹ ${before}` }),
        el("h1", { id: "day", text: day }),
        el("a", { href: `/day/${next}`, id: "next-day", title: "Next day (PageDown or ])", text: `${next} ›` }),
        el("a", { href: `/glance?${new URLSearchParams({ since: day })}`, id: "glance", text: "The day at a glance" }),
        jump,
      ),
      this.note,
      this.hours,
      this.scrub,
      this.moments,
      this.pane,
    );
    if (!this.frames.length) this.note.textContent = answer.why_empty || "Nothing was recorded this day.";
    else if (answer.incomplete) this.note.textContent = answer.incomplete;
    this.drawHours();
    this.drawMoments();
    this.keys = (event) => this.key(event, before, next);
    document.addEventListener("keydown", this.keys);
    if (day === today()) this.follow = setInterval(() => this.newest(), FOLLOW_MS);
  }

  leave() {
    this.left = true;
    document.removeEventListener("keydown", this.keys);
    clearInterval(this.follow);
    clearTimeout(this.textLater);
    this.seen?.disconnect();
  }

  key(event, before, next) {
    const typing = event.target.closest && event.target.closest("input:not([type=range]), textarea, dialog");
    if (typing || event.altKey || event.ctrlKey || event.metaKey) return;
    const moves = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -1, ArrowDown: 1 };
    if (event.key in moves) this.select(this.index + moves[event.key]);
    else if (event.key === "Home") this.select(0);
    else if (event.key === "End") this.select(this.frames.length - 1);
    else if (event.key === "PageUp" || event.key === "[") this.go(`/day/${before}`);
    else if (event.key === "PageDown" || event.key === "]") this.go(`/day/${next}`);
    else return;
    event.preventDefault();
  }

  async jump(phrase) {
    if (!phrase) return;
    try {
      const answer = await read("/api/timeline", { since: phrase, limit: 1 });
      const start = answer.start || (answer.frames[0] || {}).time;
      if (!start) throw new Error(`${phrase}: no time`);
      this.go(`/day/${dayOf(start)}?${new URLSearchParams({ at: start })}`);
    } catch (error) {
      this.note.textContent = error.message;
    }
  }

  drawHours() {
    const dayStart = Date.parse(`${this.day}T00:00:00`);
    const span = 24 * 3600 * 1000;
    for (let hour = 0; hour < 24; hour += 1) {
      this.hours.append(el("span", { class: "hour", text: hour % 3 ? "" : String(hour).padStart(2, "0") }));
    }
    // One bar for each run of one app's frames, each frame's time running to the next
    // frame's, at most IDLE_US (a gap longer than that is idle, and breaks the run).
    let run = null;
    const runs = [];
    this.frames.forEach((f, i) => {
      const startMs = Date.parse(f.time);
      const next = this.frames[i + 1];
      const endMs = Math.min(next ? Date.parse(next.time) : startMs + 60000, startMs + IDLE_US);
      if (run && run.app === f.app && run.endMs >= startMs) run.endMs = endMs;
      else runs.push((run = { app: f.app, index: i, startMs, endMs, time: f.time }));
    });
    for (const r of runs) {
      const bar = el("span", { class: "run", title: `${clock(r.time)} ${r.app}`, "data-index": r.index });
      bar.style.left = `${((r.startMs - dayStart) / span) * 100}%`;
      bar.style.width = `${Math.max(0.05, ((r.endMs - r.startMs) / span) * 100)}%`;
      bar.style.background = colour(r.app);
      this.hours.append(bar);
    }
    this.hours.addEventListener("click", (event) => {
      const bar = event.target.closest(".run");
      if (bar) this.select(Number(bar.dataset.index));
    });
    this.cursor = el("span", { class: "cursor", id: "cursor" });
    this.hours.append(this.cursor);
  }

  drawMoments() {
    // A moment: consecutive frames of one window (app and title).
    this.groups = [];
    this.groupAt = []; // each frame's moment, so a scrub step finds it at once
    this.frames.forEach((f, i) => {
      const last = this.groups.at(-1);
      if (last && last.app === f.app && last.title === f.title) last.end = i;
      else this.groups.push({ app: f.app, title: f.title, start: i, end: i, n: this.groups.length });
      this.groupAt.push(this.groups.at(-1));
    });
    // A moment's picture is asked for once it scrolls into the strip: a day of 300 moments
    // would otherwise ask for a hundred at once, ahead of the frame the person looks at.
    this.seen?.disconnect();
    this.seen = new IntersectionObserver((entries) => {
      for (const entry of entries) {
        if (!entry.isIntersecting) continue;
        entry.target.src = entry.target.dataset.src;
        this.seen.unobserve(entry.target);
      }
    }, { root: this.moments, rootMargin: "0px 400px" });
    this.drawn = null; // the moments in the strip so far: [from, to)
  }

  // The strip first holds the moments around the one shown, and the rest once the day is on
  // screen: laying out all 601 moments of the bench's day of 2,000 frames first took ~90 ms
  // of its ~300 ms first paint.
  drawAround(n) {
    const from = Math.max(0, n - FIRST_MOMENTS);
    const to = Math.min(this.groups.length, n + FIRST_MOMENTS + 1);
    for (let k = from; k < to; k += 1) this.moments.append(this.moment(k));
    this.drawn = [from, to];
    requestAnimationFrame(() => setTimeout(() => this.drawRest()));
  }

  drawRest() {
    const [from, to] = this.drawn;
    if (this.left || (from === 0 && to === this.groups.length)) return;
    const before = document.createDocumentFragment();
    const after = document.createDocumentFragment();
    for (let k = 0; k < from; k += 1) before.append(this.moment(k));
    for (let k = to; k < this.groups.length; k += 1) after.append(this.moment(k));
    const shown = this.current?.item;
    const x = shown ? shown.getBoundingClientRect().left : 0;
    this.moments.prepend(before);
    this.moments.append(after);
    this.drawn = [0, this.groups.length];
    if (shown) this.moments.scrollLeft += shown.getBoundingClientRect().left - x;
  }

  moment(n) {
    const g = this.groups[n];
    const first = this.frames[g.start];
    const picture = first.thumbnail
      ? el("img", { "data-src": thumbnail(first.id), alt: "", decoding: "async" })
      : el("span", { class: "nothumb", text: "no picture" });
    if (first.thumbnail) this.seen.observe(picture);
    const item = el("li", { "data-group": n },
      el("button", { type: "button", class: "moment", title: `${first.app} — ${first.title}`, onclick: () => this.select(g.start) },
        picture,
        el("span", { class: "when", text: clock(first.time) }),
        el("span", { class: "app", text: first.app }),
      ),
    );
    item.style.borderColor = colour(first.app);
    g.item = item;
    return item;
  }

  select(index, { address = true } = {}) {
    if (!this.frames.length) return;
    index = Math.max(0, Math.min(this.frames.length - 1, index));
    this.index = index;
    const f = this.frames[index];
    this.scrub.value = String(index);
    const dayStart = Date.parse(`${this.day}T00:00:00`);
    this.cursor.style.left = `${((Date.parse(f.time) - dayStart) / (24 * 3600 * 1000)) * 100}%`;
    const group = this.groupAt[index];
    if (this.drawn === null) this.drawAround(group.n);
    else if (!group.item) this.drawRest();
    if (group !== this.current) {
      this.current?.item.classList.remove("current");
      group.item.classList.add("current");
      group.item.scrollIntoView({ block: "nearest", inline: "nearest" });
      this.current = group;
    }
    if (address) history.replaceState(null, "", `/frame/${f.id}`);
    this.showFrame(f, group);
    for (let step = 1; step <= AHEAD; step += 1) {
      for (const near of [this.frames[index + step], this.frames[index - step]]) {
        if (near && near.thumbnail && !this.cache.has(near.id)) this.preload(near.id);
      }
    }
  }

  // A scrub step shows the picture preloaded for it, decoded already: a new <img> of the
  // same address would be asked for and decoded again (the answers are Cache-Control:
  // no-store), which was most of a step's 50 ms.
  preload(id) {
    const image = new Image();
    image.src = thumbnail(id);
    image.decode().catch(() => null);
    this.cache.set(id, image);
    if (this.cache.size > KEPT) this.cache.delete(this.cache.keys().next().value);
    return image;
  }

  picture(f) {
    const image = this.cache.get(f.id) || this.preload(f.id);
    image.id = "picture";
    image.alt = `${f.app} — ${f.title} at ${clock(f.time)}`;
    return image;
  }

  showFrame(f, group) {
    const shown = ++this.shownText;
    const picture = f.thumbnail
      ? this.picture(f)
      : el("p", { class: "nothumb", text: "No picture was stored with this frame." });
    const text = el("pre", { class: "text", id: "text", text: "…" });
    const details = el("dl", { class: "details" },
      el("dt", { text: "When" }), el("dd", { id: "frame-time", text: `${f.time.slice(0, 10)} ${clock(f.time)}` }),
      el("dt", { text: "App" }), el("dd", { id: "frame-app", text: f.app }),
      el("dt", { text: "Title" }), el("dd", { id: "frame-title", text: f.title }),
      f.url ? el("dt", { text: "Address" }) : null,
      f.url ? el("dd", {}, el("a", { href: f.url, id: "frame-url", rel: "noreferrer noopener", target: "_blank", text: f.url })) : null,
      el("dt", { text: "Text from" }), el("dd", { id: "frame-source", text: { ax: "the accessibility tree", ocr: "OCR", none: "nothing (no text)" }[f.text_source] }),
      el("dt", { text: "Frame" }), el("dd", { text: `#${f.id} (${this.index + 1} of ${this.frames.length})` }),
    );
    const count = group ? group.end - group.start + 1 : 1;
    const actions = el("div", { class: "actions" },
      el("button", { type: "button", id: "delete-frame", class: "danger", text: "Delete this frame", onclick: () => this.remove([f.id], `frame #${f.id} (${f.app} — ${f.title}, ${clock(f.time)})`) }),
      group && count > 1
        ? el("button", { type: "button", id: "delete-moment", class: "danger", text: `Delete this moment (${count} frames)`, onclick: () => this.removeGroup(group) })
        : null,
    );
    clear(this.pane).append(el("div", { class: "picture" }, picture), el("div", { class: "about" }, details, actions, text));
    clearTimeout(this.textLater);
    this.textLater = setTimeout(() => read(`/api/frame/${f.id}`).then((full) => {
      if (shown !== this.shownText) return;
      clear(text).append(...(full.text === null ? [full.problem || "The text could not be read."] : redactedText(full.text)));
      if (full.text !== null && full.text.includes("[REDACTED:")) text.before(el("p", { class: "note", id: "redaction-note", text: "Marked: what redaction replaced as the frame was taken." }));
    }, (error) => {
      if (shown === this.shownText) text.textContent = error.message;
    }), TEXT_AFTER_MS);
  }

  removeGroup(group) {
    const first = this.frames[group.start];
    const last = this.frames[group.end];
    const ids = this.frames.slice(group.start, group.end + 1).map((f) => f.id);
    this.remove(ids, `the moment of ${ids.length} frames of ${first.app} — ${first.title}, ${clock(first.time)}–${clock(last.time)}`);
  }

  async remove(ids, what) {
    if (!(await confirmDelete(`Delete ${what}? This cannot be undone.`))) return;
    try {
      const done = await change("/api/delete", { ids, confirm: true });
      this.note.textContent = `Deleted ${done.deleted} frame(s).`;
      const gone = new Set(ids);
      const keep = this.frames.findIndex((f, i) => i >= this.index && !gone.has(f.id));
      this.go(keep >= 0 ? `/frame/${this.frames[keep].id}` : `/day/${this.day}`, { replace: true });
    } catch (error) {
      this.note.textContent = error.message;
    }
  }

  async newest() {
    if (this.following) return;
    this.following = true;
    try {
      const answer = await read("/api/timeline", { limit: FOLLOW_LIMIT });
      const last = this.frames.at(-1);
      const fresh = answer.frames.filter((f) => (!last || f.id > last.id) && dayOf(f.time) === this.day).reverse();
      if (!fresh.length) return;
      const atEnd = this.index === this.frames.length - 1;
      this.frames.push(...fresh);
      this.scrub.max = String(this.frames.length - 1);
      this.scrub.disabled = false;
      clear(this.hours);
      clear(this.moments);
      this.note.textContent = "";
      this.drawHours();
      this.drawMoments();
      this.select(atEnd ? this.frames.length - 1 : this.index, { address: atEnd });
    } catch (error) {
      this.note.textContent = error.message;
    } finally {
      this.following = false;
    }
  }
}

function shiftDay(day, by) {
  const d = new Date(`${day}T12:00:00`);
  d.setDate(d.getDate() + by);
  return localDay(d);
}

function localDay(d) {
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
}

function today() {
  return localDay(new Date());
}
