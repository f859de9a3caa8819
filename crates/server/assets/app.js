// Braincode control panel: forms post JSON and show the answer where it belongs; errors
// land at their field; a running session follows its journal over server-sent events.
"use strict";

// Every message comes from the page (the server's catalogue, in the page's language).
const MESSAGES = (() => {
  try { return JSON.parse(document.body.dataset.messages || "{}"); } catch (_) { return {}; }
})();
function msg(name) { return MESSAGES[name] || name; }

// What a field may hold, checked before anything is sent (the server checks the same and
// has the last word). A value that cannot be read is an error at its field: it is never sent
// as "empty", which for a budget would remove the limit.
const TOKENS = /^(\d+)(?:\.(\d+))?([kKmM]?)$/;
const CHECKS = {
  number(text) {
    const value = Number(text);
    return Number.isFinite(value) ? { value } : { error: `${JSON.stringify(text)} ${msg("notNumber")}` };
  },
  integer(text) {
    return /^\d+$/.test(text) && Number(text) > 0
      ? { value: Number(text) }
      : { error: `${JSON.stringify(text)} ${msg("notPositive")}` };
  },
  tokens(text) {
    const match = TOKENS.exec(text);
    if (!match) return { error: `${JSON.stringify(text)} ${msg("notTokens")}` };
    const scale = { "": 1, k: 1e3, m: 1e6 }[match[3].toLowerCase()];
    const fraction = match[2] || "";
    const count = (Number(match[1] + fraction) * scale) / 10 ** fraction.length;
    if (!Number.isSafeInteger(count)) return { error: `${JSON.stringify(text)} ${msg("notTokens")}` };
    if (count === 0) return { error: msg("zeroTokens") };
    return { value: text };
  },
  dollars(text) {
    const value = Number(text.replace(/^\$/, ""));
    return Number.isFinite(value) && value > 0 && /^\$?[\d.]+$/.test(text)
      ? { value: text }
      : { error: `${JSON.stringify(text)} ${msg("notDollars")}` };
  },
  "model-id"(text) {
    if (/,/.test(text)) return { error: msg("idComma") };
    if (/\s/.test(text)) return { error: msg("idSpace") };
    return { value: text };
  },
  url(text) {
    let url;
    try { url = new URL(text); } catch (_) { url = null; }
    if (!url || !/^https?:$/.test(url.protocol) || !url.hostname || /\s/.test(text)) {
      return { error: `${JSON.stringify(text)} ${msg("notUrl")}` };
    }
    return { value: text };
  },
};

function fieldValue(el) {
  if (el.type === "checkbox") return { value: el.checked };
  const kind = el.dataset.type || el.dataset.check;
  const text = el.value.trim();
  if (!kind || !CHECKS[kind]) return { value: el.value };
  if (text === "") return { value: el.dataset.type ? null : "" };
  return CHECKS[kind](text);
}

function formBody(form) {
  const body = {};
  const errors = [];
  for (const el of form.elements) {
    if (!el.name) continue;
    const { value, error } = fieldValue(el);
    if (error) { errors.push([el.name, error]); continue; }
    const path = el.name.split(".");
    let at = body;
    for (const key of path.slice(0, -1)) at = at[key] = at[key] || {};
    at[path[path.length - 1]] = value;
  }
  return { body, errors };
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  let answer;
  try { answer = await response.json(); }
  catch (_) { answer = { ok: false, error: `${response.status} ${response.statusText}` }; }
  return answer;
}

function clearErrors(form) {
  form.querySelectorAll(".field-error").forEach((el) => el.remove());
  form.querySelectorAll(".invalid").forEach((el) => {
    el.classList.remove("invalid");
    el.removeAttribute("aria-invalid");
  });
}

function showFieldError(form, field, message, focus = true) {
  const input = form.querySelector(`[name="${CSS.escape(field)}"]`);
  if (!input) return false;
  input.classList.add("invalid");
  input.setAttribute("aria-invalid", "true");
  const note = document.createElement("span");
  note.className = "field-error";
  note.dataset.errorFor = field;
  note.textContent = message;
  input.insertAdjacentElement("afterend", note);
  if (focus) input.focus();
  return true;
}

function setStatus(form, text, bad) {
  const status = form.querySelector("[data-status]");
  if (!status) return;
  status.textContent = text;
  status.classList.toggle("bad", !!bad);
}

async function submitForm(form) {
  clearErrors(form);
  const button = form.querySelector("button[type=submit]");
  if (button) button.disabled = true;
  const { body, errors } = formBody(form);
  if (errors.length) {
    errors.forEach(([field, message], i) => showFieldError(form, field, message, i === 0));
    setStatus(form, msg("fixField"), true);
    if (button) button.disabled = false;
    return;
  }
  if (!form.dataset.live) setStatus(form, msg("working"));
  try {
    const answer = await post(form.dataset.api, body);
    if (!answer.ok) {
      const placed = answer.field && showFieldError(form, answer.field, answer.error);
      setStatus(form, placed ? msg("fixField") : answer.error, true);
      return;
    }
    const data = answer.data || {};
    setStatus(form, data.message || "");
    if (form.dataset.target && data.html !== undefined) {
      document.querySelector(form.dataset.target).innerHTML = data.html;
    }
    if (form.dataset.reload !== undefined) setTimeout(() => location.reload(), 400);
  } catch (err) {
    setStatus(form, `${msg("noAnswer")} ${err}`, true);
  } finally {
    if (button) button.disabled = false;
  }
}

document.addEventListener("submit", (event) => {
  const form = event.target.closest("form[data-api]");
  if (!form) return;
  event.preventDefault();
  submitForm(form);
});

let liveTimer;
document.addEventListener("input", (event) => {
  const form = event.target.closest("form[data-api][data-live]");
  if (!form) return;
  clearTimeout(liveTimer);
  liveTimer = setTimeout(() => submitForm(form), 150);
});

document.addEventListener("click", async (event) => {
  const fill = event.target.closest("button[data-fill]");
  if (fill) {
    const form = document.querySelector(fill.dataset.fill);
    const values = JSON.parse(fill.dataset.values);
    for (const [name, value] of Object.entries(values)) {
      const input = form.querySelector(`[name="${CSS.escape(name)}"]`);
      if (!input) continue;
      if (input.type === "checkbox") input.checked = !!value;
      else input.value = value;
    }
    form.scrollIntoView({ behavior: "smooth" });
    return;
  }
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  if (button.dataset.confirm && !confirm(button.dataset.confirm)) return;
  button.disabled = true;
  const target = button.dataset.target ? document.querySelector(button.dataset.target) : null;
  if (target) target.textContent = msg("working");
  try {
    const answer = await post(button.dataset.action, JSON.parse(button.dataset.body || "{}"));
    if (!answer.ok) {
      if (target) target.textContent = answer.error;
      else alert(answer.error);
      return;
    }
    if (target && answer.data && answer.data.html !== undefined) target.innerHTML = answer.data.html;
    if (button.dataset.reload !== undefined) location.reload();
  } finally {
    button.disabled = false;
  }
});

// The timeline and the conversation are drawn by the server: fetch the page again and take
// its new drawing of both.
let redrawTimer;
function redraw() {
  clearTimeout(redrawTimer);
  redrawTimer = setTimeout(async () => {
    const response = await fetch(location.href, { credentials: "same-origin" });
    if (!response.ok) return;
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    for (const id of ["timeline", "conversation"]) {
      const fresh = page.getElementById(id);
      const current = document.getElementById(id);
      if (fresh && current) current.innerHTML = fresh.innerHTML;
    }
  }, 300);
}

const DRAWN_RECORDS = ["run_start", "run_end", "run_error", "worker_start", "worker_end",
  "worker_error", "tool_execution_summary", "clarification_request", "review_decision", "warning"];

function followSession(table) {
  const status = document.getElementById("live-status");
  const body = table.querySelector("tbody");
  const source = new EventSource(table.dataset.liveSession);
  if (status) { status.textContent = msg("following"); status.className = "running"; }
  source.addEventListener("record", (event) => {
    const record = JSON.parse(event.data);
    body.insertAdjacentHTML("beforeend", record.html);
    const row = body.lastElementChild;
    if (row) row.classList.add("fresh");
    if (DRAWN_RECORDS.includes(record.type)) redraw();
  });
  source.addEventListener("end", (event) => {
    source.close();
    let ended = { status: "completed", label: msg("completed") };
    try { ended = JSON.parse(event.data); } catch (_) { /* an older server: plain text */ }
    if (status) {
      status.textContent = ended.label;
      status.className = ended.status;
      status.dataset.runStatus = ended.status;
    }
    redraw();
  });
  source.addEventListener("failed", (event) => {
    source.close();
    if (status) { status.textContent = event.data; status.className = "failed"; }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table[data-live-session]").forEach(followSession);
});

// The language switch: the choice is kept (a cookie the server reads, and localStorage) and
// the page is drawn again in it.
const LANG_COOKIE = "braincode_lang";
function keepLanguage(lang) {
  document.cookie = `${LANG_COOKIE}=${lang}; Path=/; SameSite=Strict; Max-Age=31536000`;
  try { localStorage.setItem(LANG_COOKIE, lang); } catch (_) { /* storage may be off */ }
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-lang]");
  if (!link) return;
  event.preventDefault();
  keepLanguage(link.dataset.lang);
  const url = new URL(location.href);
  url.searchParams.delete("lang");
  location.href = url.toString();
});

(() => {
  // A language chosen before (the cookie may have been cleared) is taken up again once.
  let saved = null;
  try { saved = localStorage.getItem(LANG_COOKIE); } catch (_) { saved = null; }
  const hasCookie = document.cookie.split(";").some((c) => c.trim().startsWith(`${LANG_COOKIE}=`));
  const fromUrl = new URL(location.href).searchParams.get("lang");
  if (fromUrl) keepLanguage(fromUrl);
  else if (saved && !hasCookie && saved !== document.documentElement.lang) {
    keepLanguage(saved);
    location.reload();
  }
})();
