// The longrun console's only script: buttons that call the JSON API (with the CSRF token),
// expiry countdowns, and live pages (the run page follows the run's server-sent events; the
// inbox asks for its list again every few seconds). Text from the server is set with
// textContent, never parsed as HTML, except fragments the server rendered and escaped itself.
"use strict";

const csrf = () => (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

async function send(method, url, body) {
  const r = await fetch(url, {
    method, credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf()},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = {};
  try { data = await r.json(); } catch (e) { data = {error: r.status + " " + r.statusText}; }
  if (!r.ok) throw new Error(data.error || (r.status + " " + r.statusText));
  return data;
}

function say(box, text, ok) {
  const out = box ? box.querySelector(".outcome") : null;
  const target = out || document.getElementById("flash");
  target.textContent = text;
  target.className = (out ? "outcome " : "") + (ok ? "ok" : "error");
}

async function fragment(url, id) {
  const r = await fetch(url, {credentials: "same-origin"});
  if (!r.ok) return;
  const html = await r.text();
  const doc = new DOMParser().parseFromString(html, "text/html");
  const fresh = doc.getElementById(id);
  const old = document.getElementById(id);
  if (fresh && old) old.replaceWith(fresh);
  tick();
}

async function decide(button) {
  const card = button.closest("[data-approval]");
  const run = card.dataset.run, approval = card.dataset.approval;
  const base = `/api/runs/${encodeURIComponent(run)}/approvals/${encodeURIComponent(approval)}`;
  const action = button.dataset.action;
  let url = base + "/approve", body = {};
  if (action === "reject") {
    const reason = card.querySelector('input[name="reason"]').value.trim();
    if (!reason) { say(card, "Write the reason first: the model receives it.", false); return; }
    url = base + "/reject"; body = {reason};
  } else if (action === "approve-edit") {
    try { body = {edit: JSON.parse(card.querySelector('textarea[name="edit"]').value)}; }
    catch (e) { say(card, "The edit is not valid JSON: " + e.message, false); return; }
  }
  card.querySelectorAll("button").forEach(b => { b.disabled = true; });
  try {
    const data = await send("POST", url, body);
    say(card, (data.decision === "reject" ? "Rejected" : "Approved") + " by " + data.by + ": " + data.result, true);
    card.classList.add("decided");
  } catch (e) {
    say(card, e.message, false);
    card.querySelectorAll("button").forEach(b => { b.disabled = false; });
  }
}

async function download(button, box) {
  // a POST with the CSRF token (the export is audited), saved through a blob URL
  const run = document.body.dataset.runId;
  const artifacts = box.querySelector('input[name="with_artifacts"]').checked;
  button.disabled = true;
  try {
    const r = await fetch(`/api/runs/${encodeURIComponent(run)}/export?with_artifacts=${artifacts}`, {
      method: "POST", credentials: "same-origin", headers: {"X-CSRF-Token": csrf()},
    });
    if (!r.ok) {
      let data = {};
      try { data = await r.json(); } catch (e) { data = {error: r.status + " " + r.statusText}; }
      throw new Error(data.error || (r.status + " " + r.statusText));
    }
    const url = URL.createObjectURL(await r.blob());
    const a = document.createElement("a");
    a.href = url;
    a.download = (r.headers.get("Content-Disposition") || "").match(/filename="?([^";]+)/)?.[1] || "evidence.zip";
    document.body.appendChild(a);
    a.click();
    a.remove();
    URL.revokeObjectURL(url);
    say(box, "Downloaded. Check it anywhere with: longrun verify-bundle " + a.download, true);
  } catch (e) { say(box, e.message, false); }
  button.disabled = false;
}

async function operate(button) {
  const run = document.body.dataset.runId;
  const box = button.closest(".controls");
  const action = button.dataset.action;
  if (action === "export") { download(button, box); return; }
  let body;
  if (action === "say") {
    const text = box.querySelector('input[name="say"]').value.trim();
    if (!text) { say(box, "Write the instruction first.", false); return; }
    body = {text, constraint: box.querySelector('input[name="constraint"]').checked};
  }
  try {
    const data = await send("POST", `/api/runs/${encodeURIComponent(run)}/${action}`, body);
    say(box, data.result, true);
  } catch (e) { say(box, e.message, false); }
}

document.addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-action]");
  if (!b) return;
  if (b.closest("[data-approval]")) decide(b); else operate(b);
});

function tick() {
  const now = Date.now();
  document.querySelectorAll("[data-expires]").forEach(el => {
    const left = Math.round((Date.parse(el.dataset.expires) - now) / 1000);
    if (left <= 0) { el.textContent = "expired"; el.classList.add("expired"); return; }
    const h = Math.floor(left / 3600), m = Math.floor(left % 3600 / 60), s = left % 60;
    el.textContent = "expires in " + (h ? h + ":" + String(m).padStart(2, "0") : m) + ":" + String(s).padStart(2, "0");
  });
}
setInterval(tick, 1000);
document.addEventListener("DOMContentLoaded", tick);

function row(item) {
  const tr = document.createElement("tr");
  tr.className = "cat-" + item.category + " fresh";
  tr.dataset.seq = item.seq;
  for (const v of [item.seq, item.at.slice(11, 19), item.kind, item.actor, item.text]) {
    const td = document.createElement("td");
    td.textContent = String(v);
    tr.appendChild(td);
  }
  return tr;
}

function followRun() {
  const body = document.body;
  const run = body.dataset.runId;
  const page = `/runs/${encodeURIComponent(run)}`;
  let pending = null, chart = false, facts = false;
  const refresh = () => {
    if (pending) return;
    pending = setTimeout(async () => {
      pending = null;
      await fragment(page + "?partial=status", "run-status");
      await fragment(page + "?partial=state", "run-state");
      const slot = document.getElementById("approval-slot");
      if (!slot.querySelector(".decided") || !slot.querySelector("input:focus, textarea:focus")) {
        await fragment(page + "?partial=approval", "approval-slot");
      }
      if (facts) {
        facts = false;
        await fragment(page + "?partial=facts", "run-facts");
      }
      if (chart) {
        chart = false;
        const r = await fetch(page + "/context.svg", {credentials: "same-origin"});
        if (r.ok) document.getElementById("context-chart").innerHTML = await r.text();
      }
    }, 300);
  };
  const after = body.dataset.lastSeq || "0";
  const source = new EventSource(`/api/runs/${encodeURIComponent(run)}/events?after=${after}`);
  const live = document.getElementById("live");
  source.addEventListener("audit", (ev) => {
    const item = JSON.parse(ev.data);
    const tbody = document.getElementById("timeline-body");
    if (!tbody.querySelector(`tr[data-seq="${item.seq}"]`)) tbody.appendChild(row(item));
    body.dataset.lastSeq = item.seq;
    if (item.category === "model" || item.category === "compaction") chart = true;
    if (item.category === "compaction") facts = true;
    refresh();
  });
  source.addEventListener("end", () => {
    source.close();
    live.textContent = "finished";
    chart = true;
    refresh();
  });
  source.onerror = () => { if (source.readyState === EventSource.CLOSED) live.textContent = "disconnected: reload"; };
}

function followInbox() {
  // ask for the ids only (cheap); fetch the rendered list, diffs and all, when they changed
  setInterval(async () => {
    const list = document.getElementById("inbox-list");
    if (list.querySelector("input:focus, textarea:focus")) return;
    const r = await fetch("/api/approvals?all=true", {credentials: "same-origin"});
    if (!r.ok) return;
    const ids = (await r.json()).approvals.map(a => a.approval_id + " ").join("");
    if (ids === list.dataset.ids) return;
    const swap = () => fragment("/inbox?partial=1", "inbox-list");
    // keep a decided card's outcome on screen a moment before the list moves on
    if (list.querySelector(".decided")) setTimeout(swap, 3000); else swap();
  }, 3000);
}

document.addEventListener("DOMContentLoaded", () => {
  if (document.body.dataset.page === "run" && document.body.dataset.finished !== "yes") followRun();
  if (document.body.dataset.page === "inbox") followInbox();
});
