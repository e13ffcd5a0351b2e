// The day at a glance (or any span): time per app and per window or site as bars, and the
// strip of which app held the screen in each hour, from the summary use case's answer.

import { read } from "./api.js";
import { colour, day as dayOf, el } from "./dom.js";

export async function showGlance(main, params, go) {
  const asked = { since: params.get("since") || "today", until: params.get("until"), app: params.get("app") };
  const since = el("input", { name: "since", id: "glance-since", value: asked.since, "aria-label": "Since", placeholder: "today, yesterday, this week" });
  const until = el("input", { name: "until", id: "glance-until", value: asked.until || "", "aria-label": "Until", placeholder: "until" });
  const app = el("input", { name: "app", id: "glance-app", value: asked.app || "", "aria-label": "App", placeholder: "app, title or site" });
  const form = el("form", { class: "search", id: "glance-form" }, since, until, app, el("button", { text: "Show" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const input of [since, until, app]) if (input.value.trim()) query.set(input.name, input.value.trim());
    go(`/glance?${query}`);
  });
  main.append(el("h1", { text: "At a glance" }), form);
  const answer = await read("/api/summary", asked);
  const note = el("p", { class: "note", id: "glance-note", role: "status" });
  const span = `${answer.start.slice(0, 16).replace("T", " ")} → ${answer.end.slice(0, 16).replace("T", " ")}`;
  note.textContent = answer.why_empty || `${minutes(answer.total.seconds)} on screen, ${span} (a silence longer than ${Math.round(answer.gap_seconds)} s is time away).`;
  main.append(note);
  if (answer.incomplete) main.append(el("p", { class: "note", text: `Incomplete: ${answer.incomplete}` }));
  if (!answer.total.frames) return () => {};
  main.append(
    el("h2", { text: answer.slice_seconds === 3600 ? "Hour by hour" : "Day by day" }),
    strip(answer),
    el("h2", { text: "Apps" }),
    bars("apps", answer.apps.map((a) => [a.app, a.app, a.seconds]), answer.other_apps, answer.total.seconds),
    el("h2", { text: "Windows and sites" }),
    bars("windows", answer.windows.map((w) => [`${w.window}${w.site ? " (site)" : ""}`, w.app, w.seconds]), answer.other_windows, answer.total.seconds),
  );
  return () => {};
}

function minutes(seconds) {
  if (seconds < 60) return `${seconds} s`;
  const m = Math.round(seconds / 60);
  return m >= 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${m} min`;
}

function bars(id, rows, other, total) {
  const longest = Math.max(1, ...rows.map((r) => r[2]), other.seconds);
  const list = el("ol", { class: "bars", id });
  const add = (label, app, seconds, title) => {
    const bar = el("span", { class: "bar" });
    bar.style.width = `${(seconds / longest) * 100}%`;
    bar.style.background = app ? colour(app) : "var(--dim)";
    list.append(el("li", { title },
      el("span", { class: "label", text: label }),
      el("span", { class: "track" }, bar),
      el("span", { class: "amount", text: `${minutes(seconds)} · ${Math.round((seconds / Math.max(1, total)) * 100)}%` }),
    ));
  };
  for (const [label, app, seconds] of rows) add(label, app, seconds, app);
  if (other.count) add(`${other.count} other(s)`, null, other.seconds, "the rest, summed");
  return list;
}

function strip(answer) {
  const out = el("ol", { class: "strip", id: "strip" });
  for (const slice of answer.slices) {
    const cell = el("li", { title: `${slice.start.slice(0, 16).replace("T", " ")}: ${slice.app ? `${slice.app}, ` : ""}${minutes(slice.seconds)} on screen` });
    const fill = el("span", { class: "fill" });
    fill.style.height = `${Math.min(100, (slice.seconds / answer.slice_seconds) * 100)}%`;
    fill.style.background = slice.app ? colour(slice.app) : "transparent";
    const label = answer.slice_seconds === 3600 ? slice.start.slice(11, 13) : dayOf(slice.start).slice(5);
    const link = el("a", { href: `/day/${dayOf(slice.start)}?${new URLSearchParams({ at: slice.start })}` }, fill);
    cell.append(link, el("span", { class: "tick", text: label }));
    out.append(cell);
  }
  return out;
}
