// The instructor's page (templates/instructor.html): every two seconds it reads the room's tally
// (/instructor?format=json, behind the instructor's cookie) and draws each part's predictions as
// bars; a part's bars are hidden until the instructor presses "show" (then on the projector view
// too). The buttons post to /instructor with the key in the address, as the seat forms do.
const main = document.querySelector(".wb-instructor");
const KEY = main.dataset.key;
const PARTS = JSON.parse(document.getElementById("wb-parts").textContent);
const projector = main.classList.contains("wb-projector");
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function bars(box, labels, counts) {
  const most = Math.max(1, ...counts);
  const items = box.querySelectorAll("li");
  counts.forEach((n, k) => {
    if (!items[k]) return;
    items[k].querySelector(".wb-bar-fill").style.width = `${(100 * n) / most}%`;
    items[k].querySelector(".wb-bar-n").textContent = String(n);
  });
}

function barList(labels) {
  return `<ol class="wb-bars">${labels.map((l) => `<li><span class="wb-bar-label">${esc(l)}</span>` +
    '<span class="wb-bar"><span class="wb-bar-fill"></span></span><span class="wb-bar-n">0</span></li>').join("")}</ol>`;
}

function draw(tally) {
  const people = document.querySelector(".wb-people");
  if (people) people.textContent = `${tally.participants} participant${tally.participants === 1 ? "" : "s"} so far.`;
  for (const [key, t] of Object.entries(tally.parts)) {
    if (projector) {
      const shown = document.querySelector(".wb-tallies-shown");
      let box = shown.querySelector(`[data-part="${CSS.escape(key)}"]`);
      if (t.shown && !box) {
        box = document.createElement("div");
        box.className = "wb-tally";
        box.dataset.part = key;
        box.innerHTML = `<div class="wb-tally-head"><b>Part ${esc(key)}.</b> ${esc(PARTS[key].ask)}</div>` +
          `<div class="wb-tally-count"></div>${barList(PARTS[key].choices)}`;
        shown.appendChild(box);
      }
      if (!t.shown && box) box.remove();
      if (box) {
        box.querySelector(".wb-tally-count").textContent = `${t.predicted} predicted, ${t.revealed} revealed`;
        bars(box, PARTS[key].choices, t.counts);
      }
      continue;
    }
    const box = document.querySelector(`.wb-tally[data-part="${CSS.escape(key)}"]`);
    if (!box) continue;
    box.querySelector(".wb-tally-count").textContent = t.predicted
      ? `${t.predicted} predicted, ${t.revealed} revealed` : "no prediction yet";
    const list = box.querySelector(".wb-bars");
    list.hidden = !t.shown;
    box.classList.toggle("wb-is-shown", t.shown);
    box.querySelector(".wb-show").textContent = t.shown ? "hide" : "show";
    bars(list, PARTS[key].choices, t.counts);
  }
  const none = document.querySelector(".wb-none-shown");
  if (none) none.hidden = Object.values(tally.parts).some((t) => t.shown);
}

async function poll() {
  try {
    const r = await fetch("/instructor?format=json", { cache: "no-store" });
    if (r.ok) {
      const data = await r.json();
      main.dataset.tally = JSON.stringify(data.tally); // for the browser test
      draw(data.tally);
    }
  } catch (e) {
    /* the server is away for a moment: the next poll tries again */
  }
}

main.addEventListener("click", async (e) => {
  const b = e.target.closest(".wb-show");
  if (!b) return;
  const on = b.textContent === "show" ? "1" : "0";
  const q = new URLSearchParams({ key: KEY, show: b.dataset.part, on });
  await fetch(`/instructor?${q}`, { method: "POST" });
  poll();
});

poll();
setInterval(poll, 2000);
