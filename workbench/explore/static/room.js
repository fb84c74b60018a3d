// The room server's pages (workbench/explore/server.py): the explorer and the workshop on one
// websocket each, and the "room is full" page's countdown.
//
// The explorer is drawn by the same front end as in JupyterLab (view.js, an anywidget module),
// given a model of this file's own (`Model`: get / set / on / send, as anywidget's) whose fields
// come from the server. The workshop's parts are filled from the server's answers; a page keeps
// its predictions and reveals in the browser (localStorage) and sends them back after a reload.
// Whatever the page waits for, it says so, with the seconds counting; a lost connection is
// retried on its own, and a part that cannot be drawn says so and is drawn again.

const CONFIG = JSON.parse(document.getElementById("wb-room-config").textContent);
const URLS = CONFIG.urls || {}; // the server's versioned addresses (static_url)

function h(html) {
  const t = document.createElement("template");
  t.innerHTML = html.trim();
  return t.content.firstElementChild;
}

function esc(s) {
  const map = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
  return String(s).replace(/[&<>"']/g, (c) => map[c]);
}

const secs = () => Math.round(performance.now() / 1000);

// --- "the room is full": try again on its own ---------------------------------------------------

function retryPage() {
  const box = document.querySelector(".wb-retry");
  const every = CONFIG.retry;
  const tries = Number(sessionStorage.getItem("wb-room-tries") || "0");
  if (tries * every >= 300) {
    sessionStorage.removeItem("wb-room-tries");
    box.textContent = "Still full after five minutes: reload this page to try again.";
    return;
  }
  let left = every;
  const tick = () => {
    box.textContent = `Trying again in ${left} s.`;
    if (left-- <= 0) {
      sessionStorage.setItem("wb-room-tries", String(tries + 1));
      location.reload();
    } else setTimeout(tick, 1000);
  };
  tick();
}

// --- what the page waits for ------------------------------------------------------------------

const status = h('<div class="wb-status" role="status" aria-live="polite"></div>');
let waitingFor = "connecting to the room server";
let since = 0;
let ticking = false;
function wait(what) {
  waitingFor = what;
  since = secs();
  showStatus();
}
// Once a second while anything waits (the page, or a part with its own line); an idle page
// runs no timer.
const ANSWER_WITHIN = 60; // seconds the page waits for its first answer before connecting again
let conn = null;
function showStatus() {
  if (waitingFor.startsWith("preparing") && secs() - since > ANSWER_WITHIN && conn && conn.ws) {
    conn.ws.close(); // no answer on an open connection: start again (the close says so)
  }
  status.hidden = !waitingFor;
  if (waitingFor) status.textContent = `${waitingFor}… ${Math.max(secs() - since, 0)} s`;
  const parts = document.querySelectorAll(".wb-wait .wb-secs");
  for (const s of parts) s.textContent = String(secs() - Number(s.dataset.since || 0));
  if ((waitingFor || parts.length) && !ticking) {
    ticking = true;
    setTimeout(() => {
      ticking = false;
      showStatus();
    }, 1000);
  }
}
function done() {
  waitingFor = "";
  showStatus();
}

function problem(text) {
  let box = document.querySelector(".wb-problem");
  if (!box) {
    box = h('<div class="wb-problem" role="alert"></div>');
    document.querySelector(".wb-page").prepend(box);
  }
  box.textContent = text;
  box.hidden = !text;
}

// --- the connection -------------------------------------------------------------------------------

class Conn {
  constructor(onMessage, hello) {
    this.onMessage = onMessage;
    this.hello = hello;
    this.queue = [];
    this.ws = null;
    this.open = false;
    this.lost = 0;
  }

  connect() {
    const proto = location.protocol === "https:" ? "wss" : "ws";
    const url = `${proto}://${location.host}/socket/${CONFIG.sid}?kind=${CONFIG.kind}`;
    const ws = (this.ws = new WebSocket(url));
    ws.onopen = () => {
      this.open = true;
      this.lost = 0;
      ws.send(JSON.stringify(this.hello()));
      for (const m of this.queue.splice(0)) ws.send(JSON.stringify(m));
      if (waitingFor.startsWith("connect") || waitingFor.startsWith("the connection")) {
        wait("preparing this page on the room server");
      }
    };
    ws.onmessage = (e) => this.onMessage(JSON.parse(e.data));
    ws.onclose = (e) => {
      this.open = false;
      if (e.code === 4000 || e.code === 4004) {
        wait("");
        problem(e.code === 4000 ? "The room is full: this page tries again in 20 s."
          : "This laptop holds as many pages of the room as it may: close one; this page tries again in 20 s.");
        setTimeout(() => location.reload(), 20000);
        return;
      }
      const STOPPED = { // closed for good: the page says why (server.CLOSED)
        4001: "This page was not served by this room (the room restarted?): reload it.",
        4002: "The instructor freed this page's seat: reload to take a seat again.",
        4003: "This page is open in another tab or window: reload here to use it here.",
      };
      if (STOPPED[e.code]) {
        wait("");
        problem(STOPPED[e.code]);
        return;
      }
      this.lost += 1;
      const delay = Math.min(2 * this.lost, 10);
      wait(`the connection to the room server was lost; trying again in ${delay} s`);
      setTimeout(() => this.connect(), delay * 1000);
    };
  }

  send(msg) {
    if (this.open) this.ws.send(JSON.stringify(msg));
    else this.queue.push(msg);
  }
}

// --- a model for view.js (anywidget's interface) --------------------------------------------------

class Model {
  constructor(id, fields, conn) {
    this.id = id;
    this.state = { ...fields };
    this.conn = conn;
    this.handlers = {};
  }
  get(k) {
    return this.state[k];
  }
  set(k, v) {
    this.state[k] = v;
  }
  save_changes() {}
  on(evt, cb) {
    (this.handlers[evt] ||= []).push(cb);
  }
  off(evt, cb) {
    this.handlers[evt] = (this.handlers[evt] || []).filter((f) => cb && f !== cb);
  }
  send(content) {
    this.conn.send({ type: "model", model: this.id, content });
  }
  update(fields) {
    Object.assign(this.state, fields);
    for (const k of Object.keys(fields)) this.fire("change:" + k);
  }
  fire(evt, ...args) {
    for (const cb of this.handlers[evt] || []) cb(...args);
  }
}

let viewModule = null;
const frontEnd = () => (viewModule ||= import(URLS["view.js"]));
let specsFile = null;
const chartSpecs = () => (specsFile ||= fetch(URLS["specs.json"]).then((r) => r.json()));

// Draw with view.js, saying so and trying again (three times) if the drawing fails.
async function draw(el, model, what, tries = 0) {
  try {
    const view = (await frontEnd()).default;
    el.replaceChildren();
    await view.render({ model, el, host: {} });
  } catch (e) {
    const again = tries < 3;
    el.replaceChildren(
      h(`<div class="wb-problem" role="alert">${esc(what)} could not be drawn (${esc(e.message || e)}).
        ${again ? "Drawing it again in 3 s." : "Reload the page to try again."}</div>`),
    );
    if (again) setTimeout(() => draw(el, model, what, tries + 1), 3000);
  }
}

// --- the pages ------------------------------------------------------------------------------------

function livePage() {
  document.body.prepend(status);
  wait("connecting to the room server");
  const models = {};
  const page = { memory: null, kept: {} };

  // the id the room's tally knows this browser's person by (issued by the room, kept here)
  const PERSON = "wb-participant";
  function stored(key) {
    try {
      return localStorage.getItem(key) || "";
    } catch (e) {
      return "";
    }
  }
  function hello() {
    return { type: "hello", query: location.search, participant: stored(PERSON) };
  }
  conn = new Conn(onMessage, hello);

  function explorerModel(id, msg, el) {
    if (models[id]) return models[id].update(msg.fields); // (also a new session after a reconnect)
    models[id] = new Model(id, msg.fields, conn);
    draw(el, models[id], "The explorer");
  }

  function onMessage(msg) {
    if (msg.type === "state") {
      done();
      const el =
        msg.model === "page"
          ? document.querySelector(".wb-live-explorer")
          : document.querySelector(".wb-free-explorer");
      return explorerModel(msg.model, msg, el);
    }
    if (msg.type === "custom") return models[msg.model] && models[msg.model].fire("msg:custom", msg.content);
    if (msg.type === "questions") return questions(msg);
    if (msg.type === "revealed") return revealed(msg);
    if (msg.type === "score") {
      const box = document.querySelector(".wb-score");
      if (box) box.innerHTML = msg.html;
      return;
    }
    if (msg.type === "note") {
      const box = document.querySelector(".wb-free-note");
      if (box) box.innerHTML = msg.html;
      return;
    }
    if (msg.type === "error") return problem(msg.text);
  }

  // --- the workshop ---
  function keep() {
    if (!page.memory) return;
    try {
      localStorage.setItem(page.memory, JSON.stringify(page.kept));
    } catch (e) {
      /* a storage that refuses (private mode, quota) keeps nothing */
    }
  }

  function questions(msg) {
    done();
    page.memory = msg.memory;
    if (msg.participant) {
      try {
        localStorage.setItem(PERSON, msg.participant);
      } catch (e) {
        /* a storage that refuses: a reload counts as a new participant */
      }
    }
    try {
      page.kept = JSON.parse(localStorage.getItem(page.memory) || "{}") || {};
    } catch (e) {
      page.kept = {};
    }
    problem((msg.notes || []).join("; "));
    for (const [key, q] of Object.entries(msg.parts)) {
      const box = document.querySelector(`.wb-part[data-part="${key}"]`);
      if (!box || box.dataset.filled) continue;
      box.dataset.filled = "1";
      const options = q.choices.map((c, k) => `<option value="${k}">${esc(c)}</option>`).join("");
      box.replaceChildren(
        h(`<div class="wb-question">${q.html}</div>`),
        h(`<div class="wb-ask"><label class="wb-predict"><span>I predict</span>
            <select><option value="">- pick your prediction -</option>${options}</select></label>
            <button type="button" class="wb-reveal">Reveal</button></div>`),
        h('<div class="wb-compare"></div>'),
        h('<div class="wb-answer"></div>'),
      );
      const select = box.querySelector("select");
      const kept = page.kept[key];
      if (kept && Number.isInteger(kept.choice) && kept.choice < q.choices.length) select.value = String(kept.choice);
      select.addEventListener("change", () => {
        const choice = select.value === "" ? null : Number(select.value);
        page.kept[key] = { choice, revealed: false };
        keep();
        conn.send({ type: "predict", part: key, choice }); // the room's tally follows the pick
      });
      box.querySelector(".wb-reveal").addEventListener("click", () => {
        const choice = select.value === "" ? null : Number(select.value);
        select.disabled = box.querySelector(".wb-reveal").disabled = true; // locked from the click
        box.querySelector(".wb-compare").innerHTML =
          `<div class="wb-wait" role="status">revealing… <span class="wb-secs" data-since="${secs()}"></span> s</div>`;
        showStatus();
        conn.send({ type: "reveal", part: key, choice });
      });
    }
    const open = document.querySelector(".wb-open-explorer");
    if (open && !open.dataset.wired) {
      open.dataset.wired = "1";
      open.addEventListener("click", () => conn.send({ type: "open-explorer" }));
    }
    if (open) open.disabled = false;
    conn.send({ type: "restore", kept: page.kept });
    // after a reconnect: the open explorer of the free exploration gets its session back, at the view it shows
    const free = models.explorer;
    if (free) conn.send({ type: "open-explorer", query: (free.get("payload") || {}).query || "" });
  }

  async function revealed(msg) {
    const box = document.querySelector(`.wb-part[data-part="${msg.part}"]`);
    if (!box || box.dataset.revealed) return;
    box.dataset.revealed = "1";
    const select = box.querySelector("select");
    select.value = msg.choice === null ? "" : String(msg.choice);
    select.disabled = box.querySelector(".wb-reveal").disabled = true;
    box.querySelector(".wb-compare").innerHTML = msg.compare;
    page.kept[msg.part] = { choice: msg.choice, revealed: true };
    keep();
    const answer = box.querySelector(".wb-answer");
    answer.replaceChildren();
    for (const item of msg.items) {
      if (item.html !== undefined) {
        answer.appendChild(h(`<div class="wb-answer-item">${item.html}</div>`));
        continue;
      }
      const el = h(`<div class="wb-chart ${esc(item.cls)}"></div>`);
      answer.appendChild(el);
      const specs = await chartSpecs();
      const model = new Model("chart", {
        kind: "chart",
        spec: item.chart,
        specs: { [item.chart]: specs[item.chart] },
        data: item.data,
        width: item.width,
        lib: URLS["vega-bundle.js"],
      }, conn);
      draw(el, model, "This chart");
    }
  }

  conn.connect();
}

if (CONFIG.kind === "retry") retryPage();
else if (CONFIG.kind === "explorer" || CONFIG.kind === "workshop") livePage();
