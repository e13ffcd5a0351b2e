// The view's pages, by address: / (today), /day/YYYY-MM-DD, /frame/ID, /search?q=..., /control,
// /memories (?space=NAME) and /memories/ID.
// Links within the view change the address without loading the page again.

import { clear, el } from "./dom.js";
import { showTimeline } from "./timeline.js";

// The other pages' modules are loaded when first shown: the timeline, the page most opened,
// is drawn without waiting for them (three fewer files before its first paint).
const pages = {
  search: () => import("./search.js"),
  control: () => import("./control.js"),
  glance: () => import("./glance.js"),
  memories: () => import("./memories.js"),
};

const main = document.getElementById("main");
let leave = () => {};

export function go(address, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", address);
  else history.pushState(null, "", address);
  return route();
}

async function route() {
  leave();
  leave = () => {};
  const path = location.pathname;
  const params = new URLSearchParams(location.search);
  for (const link of document.querySelectorAll("[data-nav]")) {
    const here = path.startsWith("/memories") ? "memories" : path.startsWith("/search") ? "search" : path.startsWith("/control") ? "control" : path.startsWith("/glance") ? "glance" : "timeline";
    link.toggleAttribute("aria-current", link.dataset.nav === here);
  }
  clear(main);
  try {
    let day = null;
    let frame = null;
    if (path.startsWith("/search")) {
      const { showSearch } = await pages.search();
      leave = await showSearch(main, params, go);
      return;
    }
    if (path.startsWith("/glance")) {
      const { showGlance } = await pages.glance();
      leave = await showGlance(main, params, go);
      return;
    }
    if (path.startsWith("/control")) {
      const { showControl } = await pages.control();
      leave = await showControl(main, go);
      return;
    }
    if (path.startsWith("/memories")) {
      const { showMemories } = await pages.memories();
      leave = await showMemories(main, path, params, go);
      return;
    }
    const dayMatch = path.match(/^\/day\/(\d{4}-\d{2}-\d{2})$/);
    const frameMatch = path.match(/^\/frame\/(\d+)$/);
    if (dayMatch) day = dayMatch[1];
    else if (frameMatch) frame = Number(frameMatch[1]);
    else if (path !== "/") throw new Error(`no page at ${path}`);
    leave = await showTimeline(main, { day, frame, at: params.get("at") }, go);
  } catch (error) {
    clear(main).append(el("p", { class: "refused", role: "alert", text: error.message }));
  }
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href^='/']");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey || link.target) return;
  event.preventDefault();
  go(link.getAttribute("href"));
});

document.getElementById("quick-search").addEventListener("submit", (event) => {
  event.preventDefault();
  const words = new FormData(event.target).get("q").trim();
  if (words) go(`/search?${new URLSearchParams({ q: words })}`);
});

window.addEventListener("popstate", route);
route();
