// Kept memories (issue 27 §4): a space's memories a page at a time, the review queue with
// approve and forget, and one memory with its history (restore an older version, forget it).
// Every answer is the keep contract's (backscroll keep --json); a change goes through the
// Keeper's call the CLI makes, so the audit trail records it (origin "api"). A screen source
// ("frame:1412") opens that moment in the timeline.

import { change, read, thumbnail } from "./api.js";
import { el } from "./dom.js";
import { confirmDelete } from "./confirm.js";

const PAGE = 20; // memories a page adds (the list request's default limit)

export async function showMemories(main, path, params, go) {
  const one = path.match(/^\/memories\/(m_[0-9a-f]{16})$/);
  if (one) return showMemory(main, one[1], params, go);
  if (path !== "/memories") throw new Error(`no page at ${path}`);
  const space = params.has("space") ? params.get("space") : "default";
  const status = await read("/api/kept/status");
  const names = new Set(status.spaces.map((s) => s.name));
  names.add("default");
  if (space) names.add(space);
  const picker = el("select", { id: "space", name: "space", "aria-label": "Space" },
    el("option", { value: "", text: "All spaces", selected: space === "" }),
    ...[...names].sort().map((name) => el("option", { value: name, text: name, selected: name === space })),
  );
  picker.addEventListener("change", () => go(`/memories?${new URLSearchParams({ space: picker.value })}`));
  const note = el("p", { class: "note", id: "kept-note", role: "status" });
  note.textContent = `${status.memories.toLocaleString()} memories kept, ${status.proposed.toLocaleString()} waiting for review, ${status.intentions_due.toLocaleString()} intention(s) due.`;
  main.append(
    el("div", { class: "dayline" }, el("h1", { text: "Kept memories" }), el("label", { class: "when" }, "Space ", picker)),
    note,
  );
  const queue = el("ol", { class: "memories", id: "review" });
  const queueMore = el("button", { type: "button", id: "review-more", hidden: true, text: "More" });
  if (status.proposed) {
    main.append(
      el("h2", { text: "Waiting for your review" }),
      el("p", { class: "note", text: "An agent's write in a space that requires review: no read serves it until you approve it." }),
      queue, queueMore,
    );
    await paged("/api/kept/review", {}, queue, queueMore, (m) => item(m, { space: true, actions: reviewActions(m, note, go) }));
  }
  const list = el("ol", { class: "memories", id: "memories" });
  const more = el("button", { type: "button", id: "kept-more", hidden: true, text: "More" });
  main.append(el("h2", { text: space ? `In space ${space}` : "In every space" }), list, more);
  const shown = await paged("/api/kept", { space }, list, more, (m) => item(m, { space: !space, open: true }));
  if (!shown) list.replaceWith(el("p", { class: "note", id: "kept-empty", text: `No memory is kept in ${space ? `space ${space}` : "any space"}.` }));
  return () => {};
}

// A list that asks for the next page with the answer's cursor; the count of its first page.
async function paged(path, params, list, more, render) {
  let cursor = null;
  const ask = async () => {
    more.disabled = true;
    try {
      const page = await read(path, { ...params, limit: PAGE, cursor });
      list.append(...page.memories.map(render));
      cursor = page.next_cursor;
      more.hidden = cursor === null;
      return page.memories.length;
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", ask);
  return ask();
}

async function showMemory(main, id, params, go) {
  const memory = await read(`/api/kept/${id}`);
  const history = await read(`/api/kept/${id}/history`);
  const back = `/memories?${new URLSearchParams({ space: memory.space })}`;
  const note = el("p", { class: "note", id: "kept-note", role: "status" });
  const forget = el("button", { type: "button", class: "danger", id: "forget", text: "Forget…" });
  forget.addEventListener("click", async () => {
    const versions = history.versions.length;
    const said = `Forget “${short(memory.text)}” (${memory.kind}, space ${memory.space}) and its ${versions} version(s)? Every version's text is erased from the log; a tombstone keeps when and by whom. This cannot be undone.`;
    if (!(await confirmDelete(said, "Forget"))) return;
    await act(note, async () => {
      const done = await change("/api/kept/forget", { id, expected_version: memory.version });
      return [back, `Forgot ${done.id} (version ${done.version}).`];
    }, go);
  });
  const versions = el("ol", { class: "versions", id: "history" },
    ...history.versions.map((v) => version(v, memory, note, go)));
  main.append(
    el("div", { class: "dayline" }, el("a", { href: back, id: "back", text: `‹ Space ${memory.space}` }), el("h1", { text: "A kept memory" })),
    note,
    el("ol", { class: "memories", id: "memory" }, item(memory, { space: true, actions: [forget] })),
  );
  const frame = frameOf(memory.source);
  if (frame !== null) main.append(await seen(frame));
  main.append(el("h2", { text: "History, oldest first" }), versions);
  return () => {};
}

function version(v, memory, note, go) {
  const current = v.version === memory.version;
  const restore = current ? el("span", { class: "badge", text: "current" }) : el("button", { type: "button", class: "restore", "data-version": v.version, text: `Restore version ${v.version}` });
  if (!current) {
    restore.addEventListener("click", () => act(note, async () => {
      const done = await change("/api/kept/revise", { id: memory.id, restore: v.version, expected_version: memory.version });
      return [`/memories/${memory.id}`, `Restored version ${v.version} as version ${done.memory.version}.`];
    }, go));
  }
  return el("li", { class: "version", "data-version": v.version },
    el("div", { class: "head" },
      el("strong", { text: `Version ${v.version}` }),
      el("span", { class: "when", text: when(v.time) }),
      v.restored_from ? el("span", { class: "when", text: `restored from version ${v.restored_from}` }) : null,
      restore,
    ),
    el("p", { class: "memory-text", text: v.text }),
    v.value ? el("p", { class: "claim", text: `value: ${v.value}` }) : null,
    el("p", { class: "source" }, "Source: ", source(v.source)),
    v.due_at ? el("p", { class: "dates", text: `due ${when(v.due_at)}` }) : null,
  );
}

// A memory as a line of a list: its kind, text, claim, dates and source.
function item(m, { space = false, open = false, actions = [] } = {}) {
  const text = open ? el("a", { href: `/memories/${m.id}`, class: "memory-text", text: m.text }) : el("p", { class: "memory-text", text: m.text });
  return el("li", { class: `memory ${m.status}`, "data-id": m.id },
    el("div", { class: "head" },
      el("span", { class: "badge kind", text: m.kind }),
      space ? el("span", { class: "space", text: `space ${m.space}` }) : null,
      m.status === "proposed" ? el("span", { class: "badge", text: "waiting for review" }) : null,
      el("span", { class: "id", text: `${m.id} v${m.version}` }),
    ),
    text,
    m.subject !== null ? el("p", { class: "claim", text: claim(m) }) : null,
    el("p", { class: "dates", text: dates(m) }),
    el("p", { class: "source" }, "Source: ", source(m.source)),
    actions.length || open ? el("div", { class: "actions" }, ...actions, open ? el("a", { href: `/memories/${m.id}`, class: "history", text: "History" }) : null) : null,
  );
}

function reviewActions(m, note, go) {
  const approve = el("button", { type: "button", class: "approve", text: "Approve" });
  approve.addEventListener("click", () => act(note, async () => {
    const done = await change("/api/kept/approve", { id: m.id });
    return [null, `Approved ${done.memory.id}: from now on it is served.`];
  }, go));
  const reject = el("button", { type: "button", class: "danger reject", text: "Forget…" });
  reject.addEventListener("click", async () => {
    if (!(await confirmDelete(`Forget the proposed “${short(m.text)}” (space ${m.space})? It was never served; its text is erased from the log. This cannot be undone.`, "Forget"))) return;
    await act(note, async () => {
      await change("/api/kept/forget", { id: m.id, expected_version: m.version });
      return [null, `Forgot ${m.id}.`];
    }, go);
  });
  return [approve, reject];
}

function claim(m) {
  const context = m.context ? ` (${m.context})` : "";
  return `${m.subject} ${m.predicate}${context} = ${m.value || "—"}`;
}

function dates(m) {
  const out = [`kept ${when(m.created)}`];
  if (m.version > 1) out.push(`revised ${when(m.updated)} (version ${m.version})`);
  if (m.valid_from) out.push(`valid from ${when(m.valid_from)}`);
  if (m.valid_until) out.push(`valid until ${when(m.valid_until)}`);
  if (m.due_at) out.push(`due ${when(m.due_at)}`);
  out.push(m.kept_until ? `kept until ${when(m.kept_until)}` : "kept until forgotten");
  return out.join(" · ");
}

const frameOf = (text) => {
  const found = text.match(/^frame:(\d{1,18})$/);
  return found ? found[1] : null;
};

// A source: a frame of this store opens that moment; a web address is a link that tells the
// site nothing of the view; anything else (a file, a commit) is shown as it was given.
function source(text) {
  const frame = frameOf(text);
  if (frame !== null) return el("a", { href: `/frame/${frame}`, class: "source-frame", text: `seen on screen, frame ${frame}` });
  if (/^https?:\/\/\S+$/i.test(text)) return el("a", { href: text, rel: "noreferrer noopener", target: "_blank", class: "source-url", text });
  return text ? el("span", { class: "source-text", text }) : el("span", { class: "dim", text: "none given" });
}

// The moment a screen source names: its time, app and title, and its picture.
async function seen(frame) {
  try {
    const shown = await read(`/api/frame/${frame}`);
    return el("a", { href: `/frame/${frame}`, class: "seen", id: "seen" },
      shown.thumbnail ? el("img", { src: thumbnail(frame), alt: "" }) : el("span", { class: "nothumb", text: "no picture" }),
      el("span", { text: `Seen on screen ${when(shown.time)}, ${shown.app} — ${shown.title}` }),
    );
  } catch (error) {
    return el("p", { class: "note", id: "seen", text: `The source frame: ${error.message}` });
  }
}

const when = (iso) => iso.slice(0, 16).replace("T", " ");
const short = (text) => (text.length > 80 ? `${text.slice(0, 79)}…` : text);

// A change, then the page read again (at the address it gives, or this one), saying what
// was done; or why not, in one line.
async function act(note, work, go) {
  try {
    const [address, said] = await work();
    await go(address || location.pathname + location.search, { replace: true });
    document.getElementById("kept-note").textContent = said;
  } catch (error) {
    note.textContent = error.message;
  }
}
