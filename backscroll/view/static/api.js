// The view's JSON is the answer contract's: each call gives an answer Struct as JSON, or a
// Refusal ({"error": "..."}) in one line.

export class Refused extends Error {}

export async function read(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") query.set(key, value);
  }
  const shown = query.toString();
  const response = await fetch(shown ? `${path}?${shown}` : path, { credentials: "same-origin" });
  return answered(response);
}

export async function change(path, body = {}) {
  const response = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return answered(response);
}

async function answered(response) {
  const type = response.headers.get("content-type") || "";
  if (!type.startsWith("application/json")) {
    throw new Refused((await response.text()).trim() || `answer ${response.status}`);
  }
  const data = await response.json();
  // A kept memory's refusal (KeepRefusal) says its code in error and its line in message.
  if (!response.ok) throw new Refused(data.message || data.error || `answer ${response.status}`);
  return data;
}

export const thumbnail = (id) => `/api/thumbnail/${id}`;
