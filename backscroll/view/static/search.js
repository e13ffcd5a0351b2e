// Search with pictures: the CLI's query syntax, time and app filters, moments best first
// (thumbnail, time, app, title, snippet with the matched words marked), fuzzy and near-miss
// matches marked as the CLI marks them, why nothing was found, and more on asking.

import { read, thumbnail } from "./api.js";
import { clock, colour, el, marked } from "./dom.js";

const PAGE = 15; // moments a page adds (the search request's default limit)

export async function showSearch(main, params, go) {
  const fields = ["q", "since", "until", "app"];
  const inputs = {
    q: el("input", { name: "q", id: "search-q", type: "search", placeholder: 'words, "a phrase", prefix*', "aria-label": "Search", value: params.get("q") || "" }),
    since: el("input", { name: "since", id: "search-since", placeholder: "since: today, 2h, last week", "aria-label": "Since", value: params.get("since") || "" }),
    until: el("input", { name: "until", id: "search-until", placeholder: "until", "aria-label": "Until", value: params.get("until") || "" }),
    app: el("input", { name: "app", id: "search-app", placeholder: "app, title or site", "aria-label": "App", value: params.get("app") || "" }),
  };
  const form = el("form", { class: "search", id: "search-form", role: "search" }, ...fields.map((f) => inputs[f]), el("button", { text: "Search" }));
  const summary = el("p", { class: "note", id: "search-note", role: "status" });
  const list = el("ol", { class: "results", id: "results" });
  const more = el("button", { type: "button", id: "more", hidden: true, text: "More" });
  main.append(form, summary, list, more);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const f of fields) if (inputs[f].value.trim()) query.set(f, inputs[f].value.trim());
    go(`/search?${query}`);
  });
  const words = params.get("q");
  if (!words) {
    inputs.q.focus();
    return () => {};
  }
  // Each page is the contract's: "More" asks for the moments ranked below with the answer's
  // cursor, in the same snapshot, and adds them below.
  let cursor = null;
  const ask = async () => {
    more.disabled = true;
    try {
      const answer = await read("/api/search", { query: words, since: params.get("since"), until: params.get("until"), app: params.get("app"), limit: PAGE, cursor });
      render(answer, list, summary, cursor !== null);
      cursor = answer.next_cursor;
      more.hidden = cursor === null;
    } catch (error) {
      summary.textContent = error.message;
      more.hidden = true;
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", ask);
  await ask();
  return () => {};
}

function render(answer, list, summary, adding) {
  const items = answer.matches.map((m) => result(m, answer.query));
  if (adding) list.append(...items);
  else list.replaceChildren(...items);
  const count = list.children.length;
  const shown = [];
  const exact = answer.matches.filter((m) => !m.fuzzy && !m.near_miss).length;
  if (!count) shown.push(`Nothing found for ${answer.query}.`);
  else if (exact) shown.push(`${count} match(es), best first${answer.next_cursor ? "; more below" : ""}.`);
  else if (answer.matches[0].fuzzy) shown.push(`0 exact matches; ${count} fuzzy match(es), a word one letter off in OCR'd text.`);
  else shown.push(`0 matches with every term; ${count} near miss(es) with some.`);
  if (answer.why_empty) shown.push(answer.why_empty);
  if (answer.incomplete) shown.push(`Incomplete: ${answer.incomplete}`);
  summary.textContent = shown.join(" ");
}

function result(m, query) {
  const seen = m.frame_ids.length > 1 ? ` (seen ${clock(m.first_seen)}–${clock(m.last_seen)}, ${m.frame_ids.length} frames)` : "";
  const badge = m.fuzzy ? el("span", { class: "badge", text: "fuzzy" }) : m.near_miss ? el("span", { class: "badge", text: "near miss" }) : null;
  const item = el("li", { class: "result" },
    el("a", { href: `/frame/${m.id}`, class: "open" },
      m.thumbnail ? el("img", { src: thumbnail(m.id), alt: "", loading: "lazy", decoding: "async" }) : el("span", { class: "nothumb", text: "no picture" }),
      el("span", { class: "head" },
        el("span", { class: "when", text: `${m.time.slice(0, 10)} ${clock(m.time)}${seen}` }),
        el("span", { class: "app", text: m.app }),
        el("span", { class: "title", text: m.title }),
        badge,
      ),
      el("span", { class: "snippet" }, ...marked(m.snippet, query, m.fuzzy)),
    ),
  );
  item.style.borderColor = colour(m.app);
  return item;
}
