"use strict";
/* The All Fours page: plain JavaScript, no build step. It holds no game logic: the server
   (agents/apps/web) keeps the match and answers every request with the table as the viewing seat sees
   it; the page draws that, sends the person's actions, and asks for the bots' moves one at a time
   at the chosen pace. */

const SUIT_SYMBOL = { C: "\u2663", D: "\u2666", H: "\u2665", S: "\u2660" };
const SUIT_NAME = { C: "clubs", D: "diamonds", H: "hearts", S: "spades" };
const RANK_NAME = { T: "10", J: "jack", Q: "queen", K: "king", A: "ace" };
const PHASE_TEXT = { stand_or_beg: "stand or beg", give_or_run: "give one or run the pack", play: "trick play", over: "over" };
const BIDS = [[52, "Stand"], [53, "Beg"], [54, "Give one"], [55, "Run the pack"]];
const SPOTS = ["bottom", "right", "top", "left"]; // relative seat 0..3 around the viewer: play goes to the right
const MAX_LINES = 300;

const ui = {
  options: null, mode: "play", state: null, eventCount: 0, busy: false, paused: false, timer: null, replayTimer: null,
  shown: null, // the id of the match or replay on screen: a late answer about another one is dropped
  review: null, // the review on screen: {id, status, steps, decisions (by step), index, ...}
};
window.allfoursTimes = []; // per bot move: {think_ms, server_ms, shown_ms} (request sent to table drawn), for tests

const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({ error: `the server answered ${response.status}` }));
  if (!response.ok) throw new ApiError(data.error || response.statusText, response.status);
  return data;
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function cardName(text) {
  return `${RANK_NAME[text[0]] || text[0]} of ${SUIT_NAME[text[1]]}`;
}

/* A card face ("QH"), a back (text null), or a clickable card of the person's hand. */
function cardEl(text, { small = false, action = null, legal = false } = {}) {
  const tag = action === null ? "div" : "button";
  const classes = ["card"];
  if (small) classes.push("small");
  if (text === null) {
    classes.push("back");
    return el(tag, { class: classes.join(" "), "aria-label": "a hidden card" });
  }
  classes.push(text[1] === "H" || text[1] === "D" ? "red" : "black");
  if (action !== null) classes.push(legal ? "legal" : "dim");
  const node = el(tag, { class: classes.join(" "), dataset: { card: text }, "aria-label": cardName(text) },
    el("span", { class: "rank" }, text[0] === "T" ? "10" : text[0]), el("span", { class: "suit" }, SUIT_SYMBOL[text[1]]));
  if (action !== null) {
    node.type = "button";
    node.addEventListener("click", () => act(action));
  }
  return node;
}

function showMessage(text) { $("message").textContent = text || ""; }
function setStatus(text) { $("status").textContent = text || ""; }

/* ------------------------------------------------------------------ setup */

async function init() {
  try {
    ui.options = await api("GET", "/api/options");
  } catch (error) {
    showMessage(`Cannot reach the server: ${error.message}`);
    return;
  }
  const list = $("bot-names");
  const bots = ui.options.bots;
  for (const name of [...bots.names, ...bots.examples, ...bots.policies]) list.append(el("option", { value: name }));
  buildRulesForm(ui.options.rules);
  document.querySelectorAll("#modes button").forEach((b) => b.addEventListener("click", () => setMode(b.dataset.mode)));
  $("setup").addEventListener("submit", (event) => { event.preventDefault(); startMatch(); });
  $("replay-file").addEventListener("change", (e) => sendLogFile(e, "/api/replays", "replay", begin, "replay"));
  $("pause").addEventListener("click", togglePause);
  $("step-once").addEventListener("click", () => { if (ui.paused) advance(); });
  $("speed").addEventListener("change", schedule);
  $("hint").addEventListener("click", askHint);
  $("view-seat").addEventListener("change", refreshView);
  $("view-open").addEventListener("change", refreshView);
  $("replay-first").addEventListener("click", () => replayGo(0));
  $("replay-prev").addEventListener("click", () => ui.state && replayGo(ui.state.step - 1));
  $("replay-next").addEventListener("click", () => ui.state && replayGo(ui.state.step + 1));
  $("replay-last").addEventListener("click", () => ui.state && replayGo(ui.state.steps));
  $("replay-slider").addEventListener("input", (e) => replayGo(Number(e.target.value)));
  $("replay-play").addEventListener("click", toggleReplayPlay);
  $("replay-this").addEventListener("click", replayThis);
  $("review-this").addEventListener("click", reviewThis);
  $("review-file").addEventListener("change", (e) => sendLogFile(e, "/api/reviews", "review", beginReview, "review"));
  $("review-prev").addEventListener("click", () => reviewStep(-1, false));
  $("review-next").addEventListener("click", () => reviewStep(1, false));
  $("review-prev-flag").addEventListener("click", () => reviewStep(-1, true));
  $("review-next-flag").addEventListener("click", () => reviewStep(1, true));
  $("review-slider").addEventListener("input", (e) => { const shown = reviewShown(); reviewGo(shown[Number(e.target.value)]); });
  $("review-seat").addEventListener("change", () => { drawReview(); const shown = reviewShown(); if (shown.length && !shown.includes(ui.review.index)) reviewGo(shown[0]); });
  $("review-open").addEventListener("change", () => ui.review && reviewGo(ui.review.index));
  document.addEventListener("keydown", (event) => { // (in a review: the arrow keys step through the decisions)
    if (ui.mode !== "review" || !ui.review || event.target.closest("input, select, textarea")) return;
    if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
      event.preventDefault();
      reviewStep(event.key === "ArrowRight" ? 1 : -1, event.shiftKey);
    }
  });
  $("new-match").addEventListener("click", () => { clearView(); setMode(["replay", "review"].includes(ui.mode) ? "play" : ui.mode); });
  setMode("play");
  document.body.dataset.ready = "true";
}

function buildRulesForm(rules) {
  const box = $("rules-fields");
  for (const rule of rules) {
    let input;
    if (rule.kind === "bool") {
      input = el("input", { type: "checkbox" });
      input.checked = rule.default;
    } else if (rule.kind === "choice") {
      input = el("select");
      for (const value of rule.values) input.append(el("option", { value: String(value) }, String(value)));
      input.value = String(rule.default);
    } else {
      input = el("input", { type: "number", min: rule.min, max: rule.max, value: rule.default });
    }
    input.id = `rule-${rule.key}`;
    input.dataset.rule = rule.key;
    box.append(el("label", {}, rule.key.replaceAll("_", " "), input));
  }
}

/* The rules that differ from the defaults, typed as the server expects. */
function chosenRules() {
  const out = {};
  for (const rule of ui.options.rules) {
    const input = $(`rule-${rule.key}`);
    let value;
    if (rule.kind === "bool") value = input.checked;
    else if (rule.kind === "int") value = Number(input.value);
    else value = rule.values.find((v) => String(v) === input.value);
    if (value !== rule.default) out[rule.key] = value;
  }
  return out;
}

function setMode(mode) {
  if (mode !== ui.mode) clearView(); // (the mode's own button again keeps the match on screen)
  ui.mode = mode;
  stopTimers();
  document.querySelectorAll("#modes button").forEach((b) => b.classList.toggle("active", b.dataset.mode === mode));
  document.querySelectorAll(".for-play, .for-watch, .for-replay, .for-review").forEach((node) => {
    node.hidden = !node.classList.contains(`for-${mode}`);
  });
  showMessage("");
}

async function startMatch() {
  stopTimers();
  showMessage("");
  const seedText = $("seed").value.trim();
  // (as text: a seed may have 128 bits, more than a JavaScript number holds exactly)
  const body = { mode: ui.mode, rules: chosenRules(), seed: seedText === "" ? null : seedText };
  if (ui.mode === "play") {
    const seat = Number($("seat").value);
    const players = [null, null, null, null];
    players[(seat + 2) % 4] = $("partner").value;
    players[(seat + 1) % 4] = $("right").value;
    players[(seat + 3) % 4] = $("left").value;
    Object.assign(body, { seat, players });
  } else {
    body.players = [0, 1, 2, 3].map((s) => $(`bot-${s}`).value);
  }
  const previous = ui.state && ui.state.mode !== "replay" && !ui.state.over ? ui.state.id : null;
  const mode = ui.mode;
  try {
    const state = await api("POST", "/api/matches", body);
    if (previous) endMatch(previous);
    if (ui.mode !== mode) { endMatch(state.id); return; } // (the person switched mode meanwhile)
    ui.paused = false;
    $("pause").textContent = "Pause";
    begin(state);
  } catch (error) {
    showMessage(`Not started: ${error.message}`);
  }
}

function begin(state) {
  ui.shown = state.id;
  $("layout").dataset.view = state.mode;
  ui.eventCount = 0;
  $("narration").replaceChildren();
  $("hint-text").replaceChildren();
  $("result").hidden = true;
  if (state.mode !== "play") { $("view-seat").value = String(state.table.seat); }
  receive(state);
}

/* ------------------------------------------------------------------ one state from the server */

function receive(state) {
  if (state.id !== ui.shown) return; // (an answer about a match no longer on screen)
  ui.state = state;
  if (state.mode === "replay") {
    $("narration").replaceChildren();
    ui.eventCount = 0;
  }
  addNarration(state.narration);
  ui.eventCount = state.event_count;
  draw(state);
  schedule();
}

function addNarration(lines) {
  const list = $("narration");
  for (const line of lines) {
    list.append(el("li", { class: line.startsWith("deal ") ? "deal-line" : "" }, line));
  }
  while (list.children.length > MAX_LINES) list.firstChild.remove();
  list.scrollTop = list.scrollHeight;
}

function yourTurn(state) {
  return state.mode === "play" && !state.over && state.table.to_act === state.person;
}

function draw(state) {
  const game = $("game");
  game.dataset.turn = yourTurn(state) ? "you" : state.over ? "none" : "bot";
  game.dataset.over = String(state.over);
  game.dataset.step = String(state.step);
  game.dataset.mode = state.mode;
  drawSeats(state);
  drawCenter(state);
  drawBids(state);
  drawScore(state);
  drawDeals(state);
  drawResult(state);
  const hintable = !state.over && (yourTurn(state) || (state.mode !== "play" && (state.open || state.table.to_act === state.table.seat)));
  $("hint").disabled = !hintable;
  if (state.mode === "replay") {
    $("replay-slider").max = String(state.steps);
    $("replay-slider").value = String(state.step);
    $("step-label").textContent = `move ${state.step} of ${state.steps}`;
  } else {
    $("step-label").textContent = `move ${state.step}`;
  }
}

/* "player_1 · team 1" (and the dealer's chip) over the bot's name, cut with an ellipsis if long (full in its title). */
function seatName(state, seat) {
  const who = state.players[seat];
  const line = el("span", { class: "who" }, `player_${seat}\u00a0\u00b7 team\u00a0${seat % 2}`);
  if (state.table.dealer === seat) line.append(el("span", { class: "chip", title: "dealer" }, "D"));
  return el("div", { class: "name" }, line, el("span", { class: "bot", title: who }, who));
}

function drawSeats(state) {
  const table = state.table;
  const legal = new Map(state.legal.map((l) => [l.action, l]));
  for (let rel = 0; rel < 4; rel++) {
    const seat = (table.seat + rel) % 4;
    const spot = $(`spot-${SPOTS[rel]}`);
    spot.classList.toggle("to-act", table.to_act === seat);
    spot.dataset.seat = String(seat);
    const name = seatName(state, seat);
    const hand = el("div", { class: rel === 0 ? "hand" : table.hands ? "hand other open" : "hand other" });
    if (rel === 0) {
      hand.id = "hand";
      const clickable = yourTurn(state);
      for (const card of table.hand) {
        const action = cardIndex(card);
        hand.append(cardEl(card, clickable ? { action, legal: legal.has(action) } : {}));
      }
    } else if (table.hands) {
      for (const card of table.hands[seat]) hand.append(cardEl(card, { small: true }));
    } else {
      for (let k = 0; k < table.cards_held[seat]; k++) hand.append(cardEl(null, { small: true }));
    }
    spot.replaceChildren(rel === 2 ? name : hand, rel === 2 ? hand : name);
  }
}

function cardIndex(text) {
  return "CDHS".indexOf(text[1]) * 13 + "23456789TJQKA".indexOf(text[0]);
}

function drawCenter(state) {
  const table = state.table;
  const trick = $("trick");
  let plays = table.trick;
  let caption = table.leader !== null && table.phase === "play" ? `player_${table.leader} leads` : "";
  const done = plays.length === 0 && table.last_trick !== null;
  if (done) {
    plays = table.last_trick.cards;
    caption = `player_${table.last_trick.winner} won the trick`;
  }
  trick.classList.toggle("done", done);
  trick.replaceChildren(...plays.map((p, i) => {
    const rel = (p.seat - table.seat + 4) % 4;
    return el("div", { class: `play from-${SPOTS[rel]}` }, el("span", { class: "order" }, String(i + 1)), cardEl(p.card));
  }));
  const info = $("center-info");
  const cards = (list) => el("div", { class: "cards" }, ...(list.length ? list.map((c) => cardEl(c, { small: true })) : ["\u2014"]));
  const kick = el("div", { class: "box" }, "kick", cards(table.kick ? [table.kick] : []));
  const aside = el("div", { class: "box" }, "set aside", cards(table.kicks_aside));
  const trump = table.trump
    ? el("div", { class: `box ${"HD".includes(table.trump) ? "red" : "black"}`, id: "trump", title: `trump: ${table.trump_name}` },
      el("span", { class: "label" }, "trump"), el("span", { class: "symbol", "aria-hidden": "true" }, SUIT_SYMBOL[table.trump]),
      el("span", { class: "suit-name" }, table.trump_name))
    : el("div", { class: "box none", id: "trump" }, el("span", { class: "label" }, "trump"), el("span", { class: "suit-name" }, "not fixed"));
  const phase = el("div", { class: "box" }, `deal ${table.deal}`, el("br"), PHASE_TEXT[table.phase] || table.phase);
  info.replaceChildren(kick, aside, trump, phase, el("div", { id: "trick-caption" }, caption));
}

function drawBids(state) {
  const table = state.table;
  const box = $("bids");
  const prompt = $("prompt");
  prompt.textContent = "";
  box.replaceChildren();
  if (state.mode !== "play" || state.over) return;
  if (!yourTurn(state)) {
    prompt.textContent = `player_${table.to_act} (${state.players[table.to_act]}) to act\u2026`;
    return;
  }
  const legal = new Set(state.legal.map((l) => l.action));
  if (table.phase === "play") {
    prompt.textContent = "Your turn: play a card.";
    return;
  }
  prompt.textContent = table.phase === "stand_or_beg" ? "Your turn: stand, or beg?" : "Your turn: give one, or run the pack?";
  const shown = table.phase === "stand_or_beg" ? BIDS.slice(0, 2) : BIDS.slice(2);
  for (const [action, label] of shown) {
    const button = el("button", { type: "button", dataset: { action: String(action) } }, label);
    button.disabled = !legal.has(action);
    if (button.disabled) button.title = "not allowed now by the rules in play";
    button.addEventListener("click", () => act(action));
    box.append(button);
  }
}

function drawScore(state) {
  const t = state.table;
  const mine = state.mode === "play" ? state.person % 2 : -1;
  const scores = (state.result || { scores: t.scores }).scores;
  const row = (team) => el("tr", { class: team === mine ? "mine" : "" },
    el("td", {}, `team ${team}`, el("br"), el("small", {}, `player_${team} & player_${team + 2}`)),
    el("td", { class: "score", id: `score-${team}` }, String(scores[team])),
    el("td", {}, t.phase === "play" ? String(t.game_points[team]) : ""));
  const head = el("tr", {}, el("th", {}, ""), el("th", {}, "score"), el("th", {}, "game points"));
  const note = `target ${t.target}` + (mine >= 0 ? ` \u00b7 you are player_${state.person}, team ${mine}` : "") +
    (state.seed !== null && state.seed !== undefined ? ` \u00b7 seed ${state.seed}` : "");
  $("scoreboard").replaceChildren(el("table", {}, head, row(0), row(1)), el("div", { class: "note" }, note));
}

function drawDeals(state) {
  const box = $("deals");
  const finished = state.deals.filter((d) => d.scored || d.scores);
  box.replaceChildren(...finished.slice(-3).reverse().map((deal) => {
    const items = deal.awards.map((a) => {
      let text = a.text;
      if (a.kind === "game") text += ` (count: team 0 ${a.count[0]}, team 1 ${a.count[1]})`;
      return el("li", { dataset: { kind: a.kind } }, text);
    });
    if (!deal.awards.some((a) => a.kind === "game") && deal.scored) {
      items.push(el("li", { dataset: { kind: "game" } }, `game: tied, no point (count: team 0 ${deal.game_count[0]}, team 1 ${deal.game_count[1]})`));
    }
    const head = `Deal ${deal.deal}: team 0 +${deal.points[0]}, team 1 +${deal.points[1]}` + (deal.scores ? ` \u2192 ${deal.scores[0]}\u2013${deal.scores[1]}` : "");
    return el("div", { class: "deal", dataset: { deal: String(deal.deal) } }, el("h3", {}, head), el("ul", {}, ...items));
  }));
}

function drawResult(state) {
  const box = $("result");
  if (!state.over || state.mode === "replay" && state.step < state.steps || ui.mode === "review") { box.hidden = true; return; }
  const r = state.result;
  let text = `Match over: team ${r.winner} wins, ${r.scores[0]} to ${r.scores[1]}.`;
  if (state.mode === "play") text += r.winner === state.person % 2 ? " Your team wins!" : " Your team loses.";
  $("result-text").textContent = text;
  $("download-log").href = `/api/matches/${state.id}/log`;
  $("replay-this").hidden = state.mode === "replay";
  $("review-this").hidden = ui.mode === "review";
  box.hidden = false;
  setStatus("");
}

/* ------------------------------------------------------------------ actions and the bots' pace */

async function act(action) {
  const state = ui.state;
  if (ui.busy || !state || !yourTurn(state)) return;
  ui.busy = true;
  try {
    const next = await api("POST", `/api/matches/${state.id}/act`, { action, step: state.step, since: ui.eventCount });
    ui.busy = false;
    showMessage("");
    $("hint-text").replaceChildren();
    receive(next);
  } catch (error) {
    ui.busy = false;
    if (state.id !== ui.shown) return; // (the match left the screen meanwhile, and was ended)
    showMessage(`Not accepted: ${error.message}`);
    if (error.status === 409) refreshView(); // (the match moved on, e.g. in another tab)
  }
}

function pace() {
  return Number($("speed").value);
}

/* After each state: ask for the next bot move, after a pause that lets a person follow it. */
function schedule() {
  clearTimeout(ui.timer);
  const state = ui.state;
  if (!state || state.over || state.mode === "replay" || yourTurn(state) || ui.busy) return;
  if (state.mode === "watch" && ui.paused) return;
  let delay = pace();
  const last = state.narration.length ? state.narration[state.narration.length - 1] : "";
  if (/scored|kick|trump/.test(last) || state.table.last_trick && state.table.trick.length === 0) delay *= 1.6;
  ui.timer = setTimeout(advance, delay);
}

async function advance() {
  const state = ui.state;
  if (ui.busy || !state || state.over || state.mode === "replay") return;
  ui.busy = true;
  const started = performance.now();
  try {
    const body = { step: state.step, since: ui.eventCount };
    if (state.mode === "watch") Object.assign(body, { seat: Number($("view-seat").value), open: $("view-open").checked });
    const next = await api("POST", `/api/matches/${state.id}/advance`, body);
    ui.busy = false;
    receive(next);
    window.allfoursTimes.push({ think_ms: next.move.think_ms, server_ms: next.server_ms, shown_ms: performance.now() - started });
  } catch (error) {
    ui.busy = false;
    if (state.id !== ui.shown) return; // (the match left the screen meanwhile, and was ended)
    showMessage(`The server refused the next move: ${error.message}`);
    if (error.status === 409) refreshView();
  }
}

function togglePause() {
  ui.paused = !ui.paused;
  $("pause").textContent = ui.paused ? "Resume" : "Pause";
  if (!ui.paused) schedule(); else clearTimeout(ui.timer);
}

function stopTimers() {
  clearTimeout(ui.timer);
  clearInterval(ui.replayTimer);
  ui.replayTimer = null;
  $("replay-play").textContent = "Play";
}

function endMatch(id) {
  api("DELETE", `/api/matches/${id}`).catch(() => {}); // (the server frees it now, not at expiry)
}

/* Off the screen: the match or replay shown (an unfinished match is ended), back to an empty table. */
function clearView() {
  stopTimers();
  const state = ui.state;
  if (state && state.mode !== "replay" && !state.over) endMatch(state.id);
  if (ui.review) { clearTimeout(ui.review.timer); if (ui.review.status === "queued" || ui.review.status === "running") endMatch(ui.review.id); }
  Object.assign(ui, { state: null, shown: null, eventCount: 0, paused: false, review: null });
  delete $("layout").dataset.view;
  delete $("layout").dataset.review;
  const game = $("game");
  Object.assign(game.dataset, { turn: "none", over: "false", step: "-1" });
  delete game.dataset.mode;
  for (const spot of SPOTS) {
    const node = $(`spot-${spot}`);
    node.replaceChildren();
    node.classList.remove("to-act");
    delete node.dataset.seat;
  }
  for (const id of ["trick", "center-info", "prompt", "bids", "scoreboard", "hint-text", "deals", "narration", "step-label",
    "review-summary", "review-flags", "review-decision", "review-graph"]) {
    $(id).replaceChildren();
  }
  $("trick").classList.remove("done");
  $("result").hidden = true;
  $("hint").disabled = true;
  $("pause").textContent = "Pause";
  $("replay-slider").max = "0";
  $("replay-slider").value = "0";
  $("replay-file").value = ""; // (so that the same file can be chosen again)
  $("review-file").value = "";
  $("review-seat").value = "all";
  $("review-slider").max = "0";
  $("review-slider").value = "0";
  showMessage("");
  setStatus("");
}

/* The state again (another view, or after a request was refused because the match moved on). */
async function refreshView() {
  const state = ui.state;
  if (!state || ui.busy) return; // (a move in flight brings the new view with it)
  if (ui.mode === "review" && ui.review) { reviewGo(ui.review.index); return; }
  const query = new URLSearchParams({ since: String(ui.eventCount) });
  if (state.mode !== "play") {
    query.set("seat", $("view-seat").value);
    query.set("open", $("view-open").checked ? "1" : "0");
  }
  if (state.mode === "replay") { query.set("step", String(state.step)); query.set("since", "0"); }
  try {
    receive(await api("GET", `/api/matches/${state.id}?${query}`));
  } catch (error) {
    showMessage(error.message);
  }
}

/* ------------------------------------------------------------------ hints */

async function askHint() {
  const state = ui.state;
  if (!state) return;
  const query = new URLSearchParams();
  if (state.mode !== "play") {
    query.set("seat", $("view-seat").value);
    query.set("open", $("view-open").checked ? "1" : "0");
    if (state.mode === "replay") query.set("step", String(state.step));
  }
  const box = $("hint-text");
  box.textContent = "searching\u2026";
  try {
    const hint = await api("GET", `/api/matches/${state.id}/hint?${query}`);
    if (ui.state === null || ui.state.id !== state.id) return; // (no longer on screen)
    const rows = hint.values.map((v) => el("tr", { class: v.action === hint.search.action ? "pick" : "" },
      el("td", {}, v.label), el("td", {}, hint.worlds ? `${(100 * v.value).toFixed(1)}%` : "only move")));
    box.replaceChildren(
      el("div", {}, `player_${hint.seat}: expert would play `, el("b", {}, hint.expert.label), ", search ", el("b", {}, hint.search.label)),
      el("div", { class: "note" }, hint.worlds ? `chance to win the match after each action, over ${hint.worlds} sampled deals ` +
        `of the unseen cards (${hint.ms} ms); search keeps the expert's choice unless another beats it by more than ` +
        `${(100 * hint.margin).toFixed(0)} in 100` : "only one legal action"),
      el("table", { id: "hint-values" }, ...rows));
  } catch (error) {
    box.textContent = `No hint: ${error.message}`;
  }
}

/* ------------------------------------------------------------------ replays */

/* The log chosen in a file input, sent to `path` to replay or review (`verb`); `show(state)` if the
   person is still in `mode`, else the server's new replay is ended at once (switched away meanwhile). */
async function sendLogFile(event, path, mode, show, verb) {
  const file = event.target.files[0];
  if (!file) return;
  showMessage("");
  try {
    const state = await api("POST", path, await file.text());
    if (ui.mode === mode) show(state); else endMatch(state.id);
  } catch (error) {
    showMessage(`Cannot ${verb} ${file.name}: ${error.message}`);
  }
}

async function replayThis() {
  const state = ui.state;
  try {
    const replay = await api("POST", `/api/matches/${state.id}/replay`);
    setMode("replay");
    begin(replay);
  } catch (error) {
    showMessage(error.message);
  }
}

async function replayGo(step) {
  const state = ui.state;
  if (!state || state.mode !== "replay") return;
  step = Math.max(0, Math.min(state.steps, step));
  const query = new URLSearchParams({ step: String(step), seat: $("view-seat").value, open: $("view-open").checked ? "1" : "0" });
  try {
    receive(await api("GET", `/api/matches/${state.id}?${query}`));
  } catch (error) {
    showMessage(error.message);
  }
}

function toggleReplayPlay() {
  if (ui.replayTimer) { stopTimers(); return; }
  $("replay-play").textContent = "Pause";
  ui.replayTimer = setInterval(() => {
    if (!ui.state || ui.state.step >= ui.state.steps) { stopTimers(); return; }
    replayGo(ui.state.step + 1);
  }, Math.max(pace(), 150));
}


/* ------------------------------------------------------------------ reviews */

const LABEL_TEXT = { inaccuracy: "inaccuracy", mistake: "mistake", blunder: "blunder" };
const SVG = "http://www.w3.org/2000/svg";
const GRAPH = { width: 800, height: 230, left: 40, right: 10, top: 14, bottom: 24 };

function svgEl(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  for (const child of children) node.append(child);
  return node;
}

function pct(value) { return `${(100 * value).toFixed(1)}%`; }
function pts(value) { return (100 * value).toFixed(1); }

async function reviewThis() {
  const state = ui.state;
  if (!state) return;
  try {
    const replay = await api("POST", `/api/matches/${state.id}/review`);
    setMode("review");
    if (state.mode === "play") $("review-seat").value = String(state.person); // (your own decisions first)
    beginReview(replay);
  } catch (error) {
    showMessage(error.message);
  }
}

function beginReview(state) {
  const job = state.review;
  begin(state);
  ui.review = { id: state.id, status: job.status, steps: job.steps, decisions: new Map(), job, index: 0, timer: null };
  $("layout").dataset.review = "true";
  for (const d of job.decisions) ui.review.decisions.set(d.step, d);
  $("game").dataset.review = job.status;
  drawReview();
  const shown = reviewShown();
  if (job.steps.length) reviewGo(shown.length ? shown[0] : 0); else showMessage("This match has no decision with a choice to review.");
  pollReview();
}

/* Ask for the decisions reviewed since the last poll, until the review is over. */
async function pollReview() {
  const review = ui.review;
  if (!review || review.id !== ui.shown) return;
  clearTimeout(review.timer);
  if (!["queued", "running"].includes(review.status)) return;
  try {
    const job = await api("GET", `/api/matches/${review.id}/review?since=${review.decisions.size}`);
    if (ui.review !== review) return; // (another review or none on screen now)
    if (job.since === review.decisions.size) for (const d of job.decisions) review.decisions.set(d.step, d);
    Object.assign(review, { status: job.status, job });
    $("game").dataset.review = job.status;
    drawReview();
    const current = review.steps[review.index];
    if (current && review.decisions.has(current[0])) drawReviewDecision();
    review.timer = setTimeout(pollReview, 600);
  } catch (error) {
    if (ui.review === review) { showMessage(`The review stopped: ${error.message}`); review.status = "failed"; }
  }
}

/* The decisions shown: all, or one seat's (the seat filter). */
function reviewShown() {
  const review = ui.review;
  if (!review) return [];
  const seat = $("review-seat").value;
  const out = [];
  review.steps.forEach(([, s], i) => { if (seat === "all" || String(s) === seat) out.push(i); });
  return out;
}

function flagged(index) {
  const d = ui.review.decisions.get(ui.review.steps[index][0]);
  return d && d.label;
}

function reviewStep(direction, flaggedOnly) {
  const review = ui.review;
  if (!review) return;
  const shown = reviewShown().filter((i) => (direction > 0 ? i > review.index : i < review.index) && (!flaggedOnly || flagged(i)));
  if (shown.length) reviewGo(direction > 0 ? shown[0] : shown[shown.length - 1]);
}

/* The table at decision ``index`` (before its move), as the acting seat saw it (or hands open). */
async function reviewGo(index) {
  const review = ui.review;
  if (!review || index === undefined || !review.steps[index]) return;
  review.index = index;
  const [step, seat] = review.steps[index];
  const query = new URLSearchParams({ step: String(step), seat: String(seat), open: $("review-open").checked ? "1" : "0" });
  drawReviewDecision();
  drawReview();
  try {
    const state = await api("GET", `/api/matches/${review.id}?${query}`);
    if (ui.review !== review || review.index !== index) return;
    receive(state);
    $("step-label").textContent = `decision ${index + 1} of ${review.steps.length} \u00b7 move ${step + 1}`;
  } catch (error) {
    showMessage(error.message);
  }
}

function drawReview() {
  drawReviewSummary();
  drawReviewFlags();
  drawReviewGraph();
  const shown = reviewShown();
  const slider = $("review-slider");
  slider.max = String(Math.max(0, shown.length - 1));
  slider.value = String(Math.max(0, shown.indexOf(ui.review.index)));
}

function drawReviewSummary() {
  const review = ui.review;
  const job = review.job;
  const names = ui.state ? ui.state.players : ["", "", "", ""];
  const box = $("review-summary");
  let status;
  if (review.status === "queued") status = `Waiting for the server to review (${job.queue_position ?? 0} before this one)\u2026`;
  else if (review.status === "running") status = `Reviewing\u2026 ${job.done} of ${job.total} decisions (${Math.round(job.seconds)} s)`;
  else if (review.status === "done") status = `Reviewed ${job.total} decisions in ${Math.round(job.seconds)} s, ${job.worlds} deals of the unseen cards each.`;
  else if (review.status === "stopped") status = `Stopped after ${job.done} of ${job.total} decisions (the server reviews for ${Math.round(job.budget_seconds)} s at most): review the rest with ${job.command}.`;
  else status = `The review ${review.status}${job.error ? `: ${job.error}` : ""}.`;
  const head = el("tr", {}, el("th", {}, "seat"), el("th", { class: "num" }, "accuracy"), el("th", { class: "num", title: "inaccuracies, mistakes, blunders" }, "?! ? ??"),
    el("th", { class: "num", title: "points a deal its flagged decisions cost" }, "pts/deal"));
  const rows = job.seats.filter((s) => s.decisions > 0).map((s) => el("tr", {},
    el("td", {}, `player_${s.seat}`, el("br"), el("small", { class: "bot", title: names[s.seat] }, names[s.seat])),
    el("td", { class: "num" }, s.accuracy === null ? "" : `${Math.round(100 * s.accuracy)}%`),
    el("td", { class: "num" }, el("span", { class: "label-inaccuracy" }, String(s.inaccuracy)), " ", el("span", { class: "label-mistake" }, String(s.mistake)), " ",
      el("span", { class: "label-blunder" }, String(s.blunder))),
    el("td", { class: "num" }, s.points_lost_a_deal.toFixed(2))));
  const links = el("div", { class: "links" }, el("a", { href: `/api/matches/${review.id}/log`, download: "" }, "Download the match log"));
  if (["done", "stopped"].includes(review.status)) links.append(el("a", { href: `/api/matches/${review.id}/review/report`, download: "" }, "Download the report"));
  const t = job.thresholds;
  box.replaceChildren(el("p", { id: "review-status" }, status), el("table", { id: "review-seats" }, head, ...rows),
    el("p", { class: "note" }, `Accuracy: the share of decisions within ${100 * job.accurate_within} point of chance of the best. ` +
      `?! inaccuracy (${100 * t.inaccuracy} points of chance lost or more), ? mistake (${100 * t.mistake}), ?? blunder (${100 * t.blunder}). ` +
      `The log is all there is to share: ${job.command} gives these figures again.`), links);
}

function drawReviewFlags() {
  const review = ui.review;
  const names = ui.state ? ui.state.players : ["", "", "", ""];
  const items = reviewShown().filter(flagged).map((i) => {
    const [step, seat] = review.steps[i];
    const d = review.decisions.get(step);
    const button = el("button", { type: "button", class: `flag label-${d.label}${i === review.index ? " current" : ""}`, dataset: { index: String(i) } },
      `move ${step + 1} \u00b7 player_${seat}: ${d.text} (best ${d.best_text}) \u2212${pts(d.loss)} ${LABEL_TEXT[d.label]}`);
    button.title = names[seat];
    button.addEventListener("click", () => reviewGo(i));
    return el("li", {}, button);
  });
  $("review-flags").replaceChildren(el("h3", {}, `Flagged decisions (${items.length})`),
    items.length ? el("ol", {}, ...items) : el("p", { class: "note" }, review.status === "done" ? "None." : "None so far."));
}

function drawReviewDecision() {
  const review = ui.review;
  const box = $("review-decision");
  const [step, seat] = review.steps[review.index] || [];
  if (step === undefined) { box.replaceChildren(); return; }
  const d = review.decisions.get(step);
  const who = `player_${seat} (${ui.state ? ui.state.players[seat] : ""})`;
  if (!d) { box.replaceChildren(el("p", {}, `Move ${step + 1}: ${who}. Not reviewed yet\u2026`)); return; }
  const open = $("review-open").checked && d.open;
  const verdict = d.action === d.best ? "the best" : `best ${d.best_text} ${pct(d.best_value)}, \u2212${pts(d.loss)} points of chance`;
  const head = el("p", { class: "verdict" }, `Move ${step + 1} \u00b7 deal ${d.deal} \u00b7 ${who} played `, el("b", {}, d.text), ` (${pct(d.value)}): ${verdict}`,
    d.label ? el("span", { class: `tag label-${d.label}` }, LABEL_TEXT[d.label]) : "");
  const cols = [el("th", {}, "action"), el("th", { class: "num" }, "chance"), el("th", { class: "num" }, "lost"), el("th", { class: "num", title: "the deal's points, this team's minus the other's" }, "pts")];
  if (open) cols.push(el("th", { class: "num open" }, "open"), el("th", { class: "num open", title: "hands open: the deal's points" }, "pts"));
  const rows = [...d.actions].sort((a, b) => b.value - a.value).map((a) => {
    const bar = el("span", { class: "bar" });
    bar.style.width = `${Math.max(1, Math.round(48 * a.value))}px`; // (CSSOM: allowed under the page's CSP)
    const row = el("tr", { class: [a.action === d.action ? "chosen" : "", a.action === d.best ? "best" : ""].join(" ").trim(), dataset: { action: String(a.action) } },
      el("td", {}, a.text + (a.action === d.action ? " \u2190" : "")), el("td", { class: "num" }, bar, pct(a.value)), el("td", { class: "num" }, pts(a.loss)),
      el("td", { class: "num" }, (a.points >= 0 ? "+" : "") + a.points.toFixed(2)));
    if (open) row.append(el("td", { class: "num open" }, pct(a.open_value)), el("td", { class: "num open" }, (a.open_points >= 0 ? "+" : "") + a.open_points.toFixed(0)));
    return row;
  });
  const note = open ? "Hands open (every card known, the real deal played out once by the expert): what each action would have given with the real hands; the labels never use it."
    : `The chance to win the match after each action, from ${who}'s cards only (${d.worlds} deals of the unseen cards).`;
  box.replaceChildren(head, el("table", { id: "review-actions" }, el("tr", {}, ...cols), ...rows), el("p", { class: "note" }, note));
}

function drawReviewGraph() {
  const review = ui.review;
  const box = $("review-graph");
  const steps = ui.state ? Math.max(1, ui.state.steps || 1) : 1;
  const width = Math.round(box.clientWidth) - 16; // (drawn at the size it is shown: its text stays readable on a phone)
  const g = width >= 300 ? { ...GRAPH, width, height: Math.round(Math.min(GRAPH.height, 0.55 * width)) } : GRAPH;
  const x = (step) => g.left + (g.width - g.left - g.right) * step / steps;
  const y = (chance) => g.top + (g.height - g.top - g.bottom) * (1 - chance);
  const svg = svgEl("svg", { viewBox: `0 0 ${g.width} ${g.height}`, role: "img", id: "review-svg", "aria-label": "each team's estimated chance to win, move by move" });
  const starts = review.job.deal_starts;
  starts.forEach((deal, i) => {
    const x0 = x(deal.step), x1 = x(i + 1 < starts.length ? starts[i + 1].step : steps);
    if (i % 2) svg.append(svgEl("rect", { x: x0, y: g.top, width: x1 - x0, height: g.height - g.top - g.bottom, fill: "#f1f3ee" }));
    svg.append(svgEl("text", { x: (x0 + x1) / 2, y: g.height - 7, "font-size": 11, "text-anchor": "middle", fill: "#666" }, String(deal.deal)));
  });
  for (const chance of [0, 0.5, 1]) {
    svg.append(svgEl("line", { x1: g.left, x2: g.width - g.right, y1: y(chance), y2: y(chance), stroke: "#ccc", "stroke-dasharray": chance === 0.5 ? "4 3" : "none" }));
    svg.append(svgEl("text", { x: g.left - 5, y: y(chance) + 4, "font-size": 11, "text-anchor": "end", fill: "#555" }, `${100 * chance}%`));
  }
  const current = review.steps[review.index];
  if (current) svg.append(svgEl("line", { x1: x(current[0] + 1), x2: x(current[0] + 1), y1: g.top, y2: g.height - g.bottom, stroke: "#999", "stroke-width": 1.5, id: "review-now" }));
  const points = review.steps.filter(([step]) => review.decisions.has(step)).map(([step, seat]) => ({ step, seat, d: review.decisions.get(step) }));
  for (const team of [0, 1]) {
    const mine = points.filter((p) => p.seat % 2 === team).map((p) => `${x(p.step + 1).toFixed(1)},${y(p.d.value).toFixed(1)}`);
    const winner = review.job.result.winner;
    if (review.status === "done" && winner >= 0) mine.push(`${x(steps)},${y(winner === team ? 1 : 0)}`); // (the result)
    if (mine.length) svg.append(svgEl("polyline", { points: mine.join(" "), fill: "none", stroke: team ? "#c0392b" : "#1f5fa8", "stroke-width": 2, class: `team${team}` }));
  }
  for (const p of points) {
    if (!p.d.label) continue;
    const dot = svgEl("circle", { cx: x(p.step + 1), cy: y(p.d.value), r: 5, class: `dot label-${p.d.label}` }, svgEl("title", {}, `move ${p.step + 1}: player_${p.seat}, ${p.d.label}`));
    svg.append(dot);
  }
  svg.append(svgEl("text", { x: g.left + 4, y: g.top + 12, "font-size": 12, fill: "#1f5fa8" }, "team 0"), svgEl("text", { x: g.left + 60, y: g.top + 12, "font-size": 12, fill: "#c0392b" }, "team 1"));
  svg.addEventListener("click", (event) => {
    const box = svg.getBoundingClientRect();
    const step = (((event.clientX - box.left) * g.width / box.width) - g.left) / (g.width - g.left - g.right) * steps - 1;
    const shown = reviewShown();
    if (!shown.length) return;
    let best = shown[0];
    for (const i of shown) if (Math.abs(review.steps[i][0] - step) < Math.abs(review.steps[best][0] - step)) best = i;
    reviewGo(best);
  });
  box.replaceChildren(el("h3", {}, "Each team's chance to win, as its own seats saw it"), svg,
    el("p", { class: "note" }, "After each decision of a team's seats, the chosen action's chance from that seat's own cards; dots: flagged decisions (click the graph to go there)."));
}

document.addEventListener("DOMContentLoaded", init);
