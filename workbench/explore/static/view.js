// The explorer's and the workshop's front end (an anywidget ES module; the room server's pages
// give it a model of their own, static/room.js).
//
// The kernel sends numbers, the browser draws: chart specs are built into vega views once, and
// each change only swaps the views' data. A change to any control is one message to the kernel
// and one payload back; the table, the verdict and both charts are swapped in one synchronous
// block, so the page never shows old and new together. Vega comes from the `lib` widget (the
// vendored vega-bundle.js, sent once per page and imported from a blob: URL), or in a room page
// from the room server's own copy of that file: nothing is loaded from outside the machine.

const LIBS = new Map(); // bundle text (or URL) -> promise of the module: one import per page
const TRIES = new Map(); // URL -> imports tried

async function vegaLib(host, model) {
  const ref = model.get("lib");
  if (typeof ref === "string" && ref.startsWith("/")) { // the room server: a file of its own
    if (!LIBS.has(ref)) {
      // a failed import is remembered by the browser under its URL: a new try needs a new URL
      const tries = (TRIES.get(ref) || 0) + 1;
      TRIES.set(ref, tries);
      const p = import(/* webpackIgnore: true */ tries > 1 ? `${ref}&try=${tries}` : ref);
      p.catch(() => LIBS.delete(ref));
      LIBS.set(ref, p);
    }
    return LIBS.get(ref);
  }
  const lib = await host.getModel(ref);
  const src = lib.get("source");
  if (!LIBS.has(src)) {
    const url = URL.createObjectURL(new Blob([src], { type: "text/javascript" }));
    LIBS.set(src, import(/* webpackIgnore: true */ url));
  }
  return LIBS.get(src);
}

function esc(s) {
  const map = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  return String(s).replace(/[&<>"']/g, (c) => map[c]);
}

function h(html) {
  const t = document.createElement("template");
  t.innerHTML = html.trim();
  return t.content.firstElementChild;
}

const EMBED = { renderer: "canvas", actions: false, logLevel: 1, tooltip: true };

async function buildView(vegaEmbed, spec) {
  const div = document.createElement("div");
  div.className = "wbx-chart";
  const res = await vegaEmbed(div, structuredClone(spec), EMBED);
  return { div, view: res.view, finalize: res.finalize };
}

// Put one payload part (datasets + params) into a view; the caller runs it.
function feed(view, part, datasets, params) {
  for (const p of params) if (p in part) view.signal(p, part[p]);
  for (const d of datasets) {
    const rows = structuredClone(part[d] || []);
    view.change(d, view.changeset().remove(() => true).insert(rows));
  }
}

const LAND = { datasets: ["land", "marks", "cut", "notes"], params: ["ymax", "ids", "head", "sub"] };
const VALLEY = { datasets: ["valley", "vcut"], params: ["chain", "head", "sub"] };

function download(name, blob) {
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

// --- is the kernel there? -----------------------------------------------------------------------
// A view talks to its kernel through its model's comm. JupyterLab closes every comm when the
// kernel restarts or stops (the model's "comm_live_update"); a view drawn from saved widget state
// has a widget manager with no kernel; a send to a closed comm throws. Any of these: the view is
// dead, and says so (banner) and disables its controls, instead of moving with no effect.
const DEAD = "the kernel is not running: re-run the cell";
const GONE = new Set(["dead", "restarting", "autorestarting", "terminating", "unknown"]);

function watchKernel(model, onDead) {
  let dead = false;
  const die = () => { if (!dead) { dead = true; onDead(); } };
  model.on("comm_live_update", die);
  const mgr = model.widget_manager;
  if (mgr && typeof mgr === "object" && "kernel" in mgr) { // JupyterLab's manager
    const k = mgr.kernel;
    if (!k || k.isDisposed || GONE.has(k.status)) die();
    else if (k.statusChanged) k.statusChanged.connect((_k, st) => { if (GONE.has(st)) die(); });
  }
  return { dead: () => dead, die };
}

// JupyterLab runs its notebook shortcuts (arrows, Page Up, End, Enter, ...) on a focused element
// unless that element or one between it and the selector carries this attribute; the element
// itself is where the selector matches, so each control gets it.
function keepKeys(node) {
  node.querySelectorAll("input, select, button, summary, textarea, a").forEach((e) => {
    e.dataset.lmSuppressShortcuts = "true";
  });
}

function showDead(box) {
  if (box.querySelector(":scope > .wb-dead")) return;
  const banner = h(`<div class="wb-dead" role="alert">${esc(DEAD)}</div>`);
  box.insertBefore(banner, box.firstChild);
  box.querySelectorAll("input, select, button, textarea").forEach((e) => { e.disabled = true; });
  box.classList.add("wb-is-dead");
}

// the workshop's parts (ipywidgets boxes): a hidden view inside each box watches its kernel. The
// view may be drawn before it is in the page, and before its box has its classes (ipywidgets
// sets them once the box is displayed): it finds its box on a later frame.
function renderWatch({ model, el }) {
  el.style.display = "none";
  let keys = null;
  let tries = 0;
  let dead = false;
  let box = null;
  const kernel = watchKernel(model, () => { dead = true; if (box) showDead(box); });
  function attach() {
    box = el.closest(".wb-live");
    if (!box && tries++ < 600) { requestAnimationFrame(attach); return; } // about 10 s
    box = box || el.parentElement;
    if (!box) return;
    keepKeys(box);
    keys = new MutationObserver(() => keepKeys(box));
    keys.observe(box, { childList: true, subtree: true });
    box.dataset.wbWatched = "1";
    if (dead) showDead(box);
  }
  attach();
  try {
    model.send({ type: "watch" }); // a view drawn after its comm closed: the send throws
  } catch (e) {
    kernel.die();
  }
  return () => { if (keys) keys.disconnect(); };
}

// --- one chart (the workshop's reveals) ----------------------------------------------------------

async function renderChart({ model, el, host }) {
  el.classList.add("wbx-one");
  const { vegaEmbed } = await vegaLib(host, model);
  const name = model.get("spec");
  const built = await buildView(vegaEmbed, model.get("specs")[name]);
  el.appendChild(built.div);
  const sets = Object.keys(model.get("data")).filter((k) => Array.isArray(model.get("data")[k]) && !["ids", "chain", "sub"].includes(k));
  async function draw() {
    const data = model.get("data");
    feed(built.view, data, sets, ["ymax", "ids", "chain", "head", "sub"].filter((p) => p in data));
    built.view.width(Math.max(320, Math.min(el.clientWidth || 640, model.get("width"))));
    await built.view.runAsync();
    el.dataset.wbDrawn = "1";
  }
  model.on("change:data", draw);
  await draw();
  return () => built.finalize();
}

// --- the explorer ------------------------------------------------------------------------------

// labels and formats only: each slider's range and step come with the payload's controls
// (workbench.common.options.SLIDERS, the one table the server checks a value against)
const SLIDERS = {
  seed: { label: "seed", fmt: (v) => String(v) },
  multiplier: { label: "budget M", fmt: (v) => v.toFixed(2) },
  lam: { label: "λ (lambda)", fmt: (v) => v.toFixed(2) },
  tau: { label: "τ (tau)", fmt: (v) => v.toFixed(2) },
  hops: { label: "hops", fmt: (v) => String(v) },
};
const SELECTS = {
  template: "scenario",
  scenario: "from file",
  total_blocks: "total blocks",
  encoder: "encoder",
  policy: "policy",
};
const ORDER = ["template", "scenario", "seed", "total_blocks", "encoder", "policy", "multiplier", "lam", "tau", "hops"];
const cls = (k) => "wb-control-" + k.replace(/_/g, "-");
const SHORT = { seed: "seed", total_blocks: "blocks", lam: "λ", tau: "τ", hops: "hops", template: "scenario", encoder: "encoder", policy: "policy", multiplier: "M", scenario: "scenario" };

function controlHTML(k) {
  if (k in SLIDERS) {
    const s = SLIDERS[k];
    return `<div class="wbx-ctl ${cls(k)}" data-key="${k}"><label><span class="wbx-name">${s.label}</span>
      <input type="range"><output></output></label></div>`;
  }
  return `<div class="wbx-ctl ${cls(k)}" data-key="${k}"><label><span class="wbx-name">${SELECTS[k]}</span>
    <select></select></label></div>`;
}

const SKELETON = `
<div class="wbx">
  <div class="wbx-side">
    <div class="wbx-controls">${ORDER.map(controlHTML).join("")}</div>
    <div class="wbx-why"></div>
    <div class="wbx-box wbx-files">
      <label class="wbx-upload wb-control-upload"><span>load a scenario file (.jsonl)</span>
        <input type="file" accept=".jsonl,.json,application/json"></label>
    </div>
    <div class="wbx-box wbx-share">
      <button type="button" class="wbx-copy" title="a link that opens this exact view">copy link</button>
      <div class="wbx-link"></div>
      <div class="wbx-export">
        <span>save</span><span><button type="button" data-export="csv" title="the ranking table as CSV">table CSV</button>
          <button type="button" data-export="json" title="every knob of this view as JSON">state JSON</button></span>
        <span>landscape</span><span><button type="button" data-export="landscape.svg">SVG</button>
          <button type="button" data-export="landscape.png">PNG</button></span>
        <span>valley</span><span><button type="button" data-export="valley.svg">SVG</button>
          <button type="button" data-export="valley.png">PNG</button></span>
      </div>
    </div>
  </div>
  <div class="wbx-main">
    <div class="wbx-top">
      <div class="wbx-verdict wb-verdict"></div>
      <span class="wbx-spinner" role="status" aria-live="polite">working…</span>
    </div>
    <div class="wbx-msg" role="status"></div>
    <div class="wbx-err" role="alert"></div>
    <div class="wbx-land wb-landscape"></div>
    <div class="wbx-row">
      <div class="wbx-valley wb-valley"></div>
      <details class="wbx-tdetails" open><summary>ranking table</summary>
        <div class="wbx-tbox wb-ranking"></div></details>
    </div>
  </div>
</div>`;

function tableHTML(t) {
  const head = t.cols.map((c) => `<th>${esc(c)}</th>`).join("");
  const body = t.rows
    .map((r, k) => `<tr class="${esc(t.cls[k])}">` + r.map((c) => `<td>${esc(c)}</td>`).join("") + "</tr>")
    .join("");
  return `<table class="wb-table"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

async function renderExplorer({ model, el, host }) {
  el.classList.add("wb-explorer", "wb-live");
  const root = h(SKELETON);
  root.dataset.wbSent = "0";
  root.dataset.lmSuppressShortcuts = "true";
  keepKeys(root); // JupyterLab: arrow keys move a slider, not the notebook's cell
  el.appendChild(root);
  const $ = (s) => root.querySelector(s);
  const ctl = (k) => root.querySelector(`.wbx-ctl[data-key="${k}"]`);
  let views = null; // spec name -> {div, view, finalize}, built once at the first payload
  let family = null;
  let latest = null; // the newest payload not yet applied (latest wins)
  let running = false;
  let sent = 0; // requests sent to the kernel; a payload answers one of them (payload.seq)
  let answered = 0;
  let busyTimer = null;
  let ticker = null;

  // --- talking to the kernel ---
  const kernel = watchKernel(model, () => {
    showDead(root);
    root.dataset.wbDead = "1";
    clearTimeout(busyTimer);
    root.classList.remove("wbx-busy");
  });
  function request(content) {
    if (kernel.dead()) return;
    sent += 1;
    root.dataset.wbSent = String(sent);
    try {
      model.send({ ...content, seq: sent });
    } catch (e) {
      kernel.die(); // "Cannot send": the comm is closed
      return;
    }
    clearTimeout(busyTimer);
    busyTimer = setTimeout(showBusy, 100); // busy shows only when an answer takes > 100 ms
  }
  function showBusy() {
    const waiting = answered < sent && !busyTimer;
    root.classList.toggle("wbx-busy", !!model.get("busy") || waiting);
  }
  function onChange(k, value) {
    request({ type: "set", changes: { [k]: value } });
  }

  for (const k of ORDER) {
    const box = ctl(k);
    const input = box.querySelector("input, select");
    if (k in SLIDERS) {
      const out = box.querySelector("output");
      input.addEventListener("input", () => { out.textContent = SLIDERS[k].fmt(Number(input.value)); });
      input.addEventListener("change", () => onChange(k, Number(input.value)));
    } else {
      input.addEventListener("change", () => onChange(k, k === "total_blocks" || k === "scenario" ? Number(input.value) : input.value));
    }
  }

  // --- upload: the file's text goes to the kernel, which reads it like `workbench evaluate` ---
  const file = root.querySelector(".wbx-upload input");
  file.addEventListener("change", async () => {
    const f = file.files && file.files[0];
    if (!f) return;
    const text = await f.text();
    request({ type: "upload", name: f.name, text });
    file.value = "";
  });

  // --- share and export ---
  $(".wbx-copy").addEventListener("click", async () => {
    const p = model.get("payload");
    if (!p || !p.query) return;
    // The room's explorer page: in the room, this server's (with its token); in JupyterLab, the
    // address `make app` serves on this machine (the room prints its token).
    const base = model.get("link_base") || location.pathname;
    const page = /^https?:/.test(base) ? base : location.origin + base;
    const extra = model.get("link_extra");
    const link = page + "?" + p.query + (extra ? "&" + extra : "");
    const box = $(".wbx-link");
    box.innerHTML = `<input type="text" readonly aria-label="link to this view">`;
    keepKeys(box);
    const input = box.querySelector("input");
    input.value = link;
    input.select();
    let copied = false;
    try {
      await navigator.clipboard.writeText(link);
      copied = true;
    } catch (e) {
      copied = false; // no clipboard (insecure page): the link stays selected in the box
    }
    $(".wbx-copy").textContent = copied ? "link copied" : "copy the link below";
    setTimeout(() => { $(".wbx-copy").textContent = "copy link"; }, 2000);
  });
  root.querySelectorAll("[data-export]").forEach((b) => b.addEventListener("click", async () => {
    const what = b.dataset.export;
    const p = model.get("payload");
    if (!p || !views) return;
    if (what === "csv" || what === "json") return request({ type: "export", what });
    const [chart, kind] = what.split(".");
    const view = chart === "valley" ? views.valley.view : views[family].view;
    const name = `${p.stem}_${chart}.${kind}`;
    if (kind === "svg") download(name, new Blob([await view.toSVG()], { type: "image/svg+xml" }));
    else download(name, await (await fetch(await view.toImageURL("png", 2))).blob());
  }));
  model.on("msg:custom", (msg) => {
    if (msg.type === "download") download(msg.name, new Blob([msg.text], { type: msg.mime }));
  });

  // --- drawing ---
  async function ensureViews() {
    if (views) return;
    const { vegaEmbed } = await vegaLib(host, model);
    const specs = model.get("specs");
    const names = ["components", "similarity", "recency", "valley"];
    const built = await Promise.all(names.map((n) => buildView(vegaEmbed, specs[n])));
    views = Object.fromEntries(names.map((n, i) => [n, built[i]]));
    root.wbViews = views; // for the browser test and the bench
    $(".wbx-valley").appendChild(views.valley.div);
    // JupyterLab's Run All scrolls to the notebook's last cell as it starts; a view drawn in a
    // notebook brings its controls back into sight once, when it is first drawn
    if (el.closest(".jp-Notebook")) requestAnimationFrame(() => root.scrollIntoView({ block: "start" }));
  }

  function setControls(p) {
    const st = p.state;
    for (const k of ORDER) {
      const box = ctl(k);
      const input = box.querySelector("input, select");
      const c = p.controls[k];
      box.hidden = !c.shown;
      if (input.tagName === "SELECT") {
        const opts = c.options.map((o) => `<option value="${esc(o[0])}">${esc(o[1])}</option>`).join("");
        if (input.dataset.opts !== opts) { input.innerHTML = opts; input.dataset.opts = opts; }
      }
      if (k in SLIDERS) { input.min = c.min; input.max = c.max; input.step = c.step; }
      const v = String(st[k]);
      if (input.value !== v) input.value = v;
      if (k in SLIDERS) box.querySelector("output").textContent = SLIDERS[k].fmt(Number(st[k]));
      const off = kernel.dead() || !model.get("ready") || !!c.why;
      input.disabled = off;
      box.classList.toggle("wbx-off", off);
      box.title = c.why || "";
    }
    // one line per reason: which inactive controls it covers, and why
    const why = new Map();
    for (const k of ORDER) {
      const c = p.controls[k];
      if (c.shown && c.why) why.set(c.why, [...(why.get(c.why) || []), SHORT[k]]);
    }
    $(".wbx-why").innerHTML = model.get("ready")
      ? [...why].map(([r, ks]) => `<div>${esc(ks.join(", "))}: ${esc(r)}</div>`).join("")
      : "";
    file.disabled = kernel.dead() || !model.get("ready");
    $(".wbx-copy").disabled = kernel.dead() || !p.query;
    $(".wbx-copy").title = p.query ? "a link that opens this exact view" : "a link cannot carry an uploaded file";
  }

  function width(box, fallback) {
    return Math.max(300, Math.floor(box.getBoundingClientRect().width) || fallback);
  }

  async function apply(p) {
    const T = { recv: performance.now(), kernel: p.kernel_ms };
    await ensureViews();
    const fam = p.land.family;
    const lv = views[fam].view;
    const vv = views.valley.view;
    feed(lv, p.land, LAND.datasets, LAND.params);
    feed(vv, p.valley, VALLEY.datasets, VALLEY.params);
    lv.width(width($(".wbx-land"), 640));
    vv.width(Math.min(420, width($(".wbx-valley"), 360)));
    await Promise.all([lv.runAsync(), vv.runAsync()]);
    T.vega = performance.now();
    // --- the swap: one synchronous block from here on, so one frame shows all of it ---
    if (family !== fam) {
      $(".wbx-land").replaceChildren(views[fam].div);
      family = fam;
    }
    const tb = $(".wbx-tbox");
    const body = tb.querySelector("tbody");
    if (body && body.rows.length === p.table.rows.length) {
      p.table.rows.forEach((r, k) => {
        const tr = body.rows[k];
        if (tr.className !== p.table.cls[k]) tr.className = p.table.cls[k];
        r.forEach((c, m) => { if (tr.cells[m].textContent !== c) tr.cells[m].textContent = c; });
      });
    } else tb.innerHTML = tableHTML(p.table);
    $(".wbx-tdetails summary").textContent = `ranking table (${p.table.rows.length} blocks)`;
    const v = $(".wbx-verdict");
    v.innerHTML = `<b class="wb-verdict-text">${esc(p.verdict)}</b>` +
      (p.warnings || []).map((w) => `<div class="wb-warn" role="note">warning: ${esc(w)}</div>`).join("");
    v.classList.toggle("wbx-broken", !!p.broken);
    if (p.seq >= sent) setControls(p); // controls follow the kernel unless the user moved on
    else setControls({ ...p, state: { ...p.state, ...currentInputs() } });
    answered = Math.max(answered, p.seq);
    T.swap = performance.now();
    root.dataset.wbT = JSON.stringify(T); // where the time went (scripts/bench_explorer.py)
    root.dataset.wbSeq = String(p.seq);
    root.dataset.wbState = p.query || "";
    if (model.get("follow") && p.query) history.replaceState(null, "", location.pathname + "?" + p.query);
  }

  function currentInputs() {
    const out = {};
    for (const k of ORDER) {
      const input = ctl(k).querySelector("input, select");
      out[k] = input.value;
    }
    return out;
  }

  let failures = 0; // drawings failed in a row: each is tried again, three times at most
  async function pump() {
    if (running) return;
    running = true;
    while (latest) {
      const p = latest;
      latest = null;
      try {
        await apply(p);
        if (failures) $(".wbx-err").textContent = model.get("error") || "";
        failures = 0;
      } catch (e) {
        failures += 1;
        const again = failures <= 3;
        $(".wbx-err").textContent = `The charts could not be drawn (${e.message}); ` +
          (again ? "drawing them again in 3 s." : "reload the page to try again.");
        if (again) setTimeout(() => { latest = latest || p; pump(); }, 3000);
      }
    }
    running = false;
    clearTimeout(busyTimer);
    busyTimer = null;
    showBusy();
  }

  function onPayload() {
    const p = model.get("payload");
    if (!p || p.seq === undefined || !p.verdict) return;
    latest = p;
    pump();
  }
  function showMessage() {
    const m = model.get("message");
    const box = $(".wbx-msg");
    clearInterval(ticker);
    ticker = null;
    box.textContent = m;
    if (m && model.get("busy")) {
      const t0 = performance.now();
      ticker = setInterval(() => {
        box.textContent = `${model.get("message")} ${Math.round((performance.now() - t0) / 1000)} s`;
      }, 1000);
    }
  }
  function showError() {
    $(".wbx-err").textContent = model.get("error");
    if (model.get("error")) answered = sent; // the kernel answered with an error, not a view
    showBusy();
  }
  function showReady() {
    const p = model.get("payload");
    if (p && p.controls) setControls(p);
    else for (const k of ORDER) ctl(k).querySelector("input, select").disabled = kernel.dead() || !model.get("ready");
    file.disabled = kernel.dead() || !model.get("ready");
    root.classList.toggle("wbx-loading", !model.get("ready"));
  }

  model.on("change:payload", onPayload);
  model.on("change:busy", () => { showBusy(); showMessage(); });
  model.on("change:message", showMessage);
  model.on("change:error", showError);
  model.on("change:ready", showReady);
  let lastWidth = 0;
  const resize = new ResizeObserver(() => {  // redraw at the new width (sidebar opened, window resized)
    const w = Math.floor($(".wbx-land").getBoundingClientRect().width);
    const p = model.get("payload");
    if (Math.abs(w - lastWidth) < 8 || !p || !p.verdict || !views) return;
    lastWidth = w;
    latest = latest || p;
    pump();
  });
  resize.observe($(".wbx-land"));
  showMessage();
  showError();
  showReady();
  onPayload();
  return () => {
    resize.disconnect();
    clearInterval(ticker);
    if (views) Object.values(views).forEach((v) => v.finalize());
  };
}

const RENDER = { chart: renderChart, explorer: renderExplorer, watch: renderWatch };

export default {
  render(ctx) {
    return (RENDER[ctx.model.get("kind")] || renderExplorer)(ctx);
  },
};
