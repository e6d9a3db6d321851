// The lab node's live dashboard: polls /dashboard.json every few seconds and redraws the tables
// and charts in place (no page reload). Every value goes into the page as text, never as markup.
"use strict";

const POLL_MS = 2000;
const KIND_COLORS = { matmul: "#1558b0", graph: "#8a4fbf", train: "#c2681b" };
const LOSS_COLORS = ["#c2681b", "#1558b0", "#1e7a34", "#8a4fbf", "#b3261e", "#3d7f86"];
const charts = {};
let lastSuccess = 0;

// -- formatting ---------------------------------------------------------------------------------

function plural(count, word) {
  return count + " " + word + (count === 1 ? "" : "s");
}

function duration(seconds) {
  seconds = Math.max(0, Math.round(seconds));
  if (seconds < 60) return plural(seconds, "second");
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return plural(minutes, "minute");
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return plural(hours, "hour") + " " + plural(minutes % 60, "minute");
  return plural(Math.floor(hours / 24), "day") + " " + plural(hours % 24, "hour");
}

function ago(epochSeconds, now) {
  if (epochSeconds === null || epochSeconds === undefined) return "";
  const seconds = now - epochSeconds;
  if (seconds < 5) return "just now";
  return duration(seconds) + " ago";
}

function clock(epochSeconds) {
  return new Date(epochSeconds * 1000).toLocaleString();
}

function minuteLabel(epochSeconds) {
  const options = { hour: "2-digit", minute: "2-digit" };
  return new Date(epochSeconds * 1000).toLocaleTimeString([], options);
}

function formatLoss(loss) {
  return loss === null ? "not a number" : loss.toPrecision(5);
}

// -- DOM helpers --------------------------------------------------------------------------------

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function timeCell(epochSeconds, now) {
  const cell = element("td", ago(epochSeconds, now));
  if (epochSeconds !== null && epochSeconds !== undefined) cell.title = clock(epochSeconds);
  return cell;
}

function progressCell(done, total, unit) {
  const cell = element("td");
  const bar = element("progress");
  bar.max = Math.max(total, 1);
  bar.value = Math.min(done, bar.max);
  cell.append(bar, " " + done + " of " + plural(total, unit));
  return cell;
}

// Fills table `id` with one row per item (built by `row`), or shows its empty note instead.
function fillTable(id, items, row) {
  const table = document.getElementById(id);
  const body = table.tBodies[0];
  body.replaceChildren(...items.map(row));
  table.hidden = items.length === 0;
  document.getElementById(id + "-empty").hidden = items.length !== 0;
}

// -- sections -----------------------------------------------------------------------------------

function renderHeader(state) {
  document.getElementById("about").textContent =
    "Version " + state.version + ", up " + duration(state.now - state.started) +
    " (since " + clock(state.started) + ").";
}

function renderSummary(counts) {
  const tiles = [
    ["volunteers_connected", "volunteers connected"], ["tasks_queued", "tasks queued"],
    ["tasks_leased", "tasks being computed"], ["researchers_connected", "researchers connected"],
    ["access_requests_pending", "access requests pending", true],
    ["volunteers_quarantined", "volunteers quarantined", true],
    ["volunteers_banned", "volunteers banned", true],
  ];
  document.getElementById("summary").replaceChildren(...tiles.map(([key, label, alerting]) => {
    const tile = element("div", null, "tile" + (alerting && counts[key] > 0 ? " alert" : ""));
    tile.dataset.count = key;
    tile.append(element("div", counts[key], "value"), element("div", label, "label"));
    return tile;
  }));
}

function jobRow(job, now) {
  const row = element("tr");
  row.dataset.job = job.id;
  row.dataset.state = job.state;
  const unit = job.kind === "train" ? "round" : "task";
  row.append(element("td", job.id), element("td", job.kind),
             element("td", job.state, "state-" + job.state),
             progressCell(job.tasks_done, job.tasks, unit), timeCell(job.created, now),
             job.finished === null ? element("td", "not yet") : timeCell(job.finished, now));
  return row;
}

// `rounds`: a round's graph job → its training job.
function holdsText(holds, rounds) {
  if (holds.length === 0) return "waiting for work";
  return holds.map((hold) => hold.kind + " task " + hold.task +
                   (hold.job ? " of job " + hold.job : "") +
                   (rounds.has(hold.job) ? " (a round of training job " + rounds.get(hold.job) +
                    ")" : "")).join("; ");
}

function volunteerRow(volunteer, rounds) {
  const row = element("tr");
  row.dataset.volunteer = volunteer.id;
  row.append(element("td", volunteer.id), element("td", volunteer.backend),
             element("td", volunteer.slots, "number"), element("td", volunteer.leases, "number"),
             element("td", volunteer.audits_passed, "number"),
             element("td", volunteer.quarantined ? "yes" : "no"),
             element("td", holdsText(volunteer.holds, rounds)));
  return row;
}

function verdictRow(verdict) {
  const row = element("tr");
  row.append(element("td", verdict.kind), element("td", verdict.task, "number"),
             element("td", verdict.volunteer), element("td", verdict.method),
             element("td", verdict.verdict, "verdict-" + verdict.verdict));
  return row;
}

function roundsTable(rounds) {
  const table = element("table");
  const head = element("tr");
  for (const title of ["round", "loss", "tasks", "rejected", "seconds", "graph job"])
    head.append(element("th", title));
  table.append(head);
  for (const round of rounds.slice(-20).reverse()) {
    const row = element("tr");
    row.dataset.round = round.round;
    row.append(element("td", round.round, "number"),
               element("td", formatLoss(round.loss), "number"),
               element("td", round.tasks, "number"), element("td", round.rejected, "number"),
               element("td", round.seconds.toFixed(2), "number"), element("td", round.graph_job));
    table.append(row);
  }
  return table;
}

function trainingCard(job, now) {
  const card = element("div", null, "training-job");
  card.dataset.job = job.id;
  card.dataset.state = job.state;
  card.append(element("h3", "Training job " + job.id));
  const line = element("p");
  const bar = element("progress");
  bar.max = Math.max(job.rounds, 1);
  bar.value = Math.min(job.rounds_done, bar.max);
  line.append(element("span", job.state, "state-" + job.state), " · ", bar,
              " " + job.rounds_done + " of " + plural(job.rounds, "round") +
              " · submitted " + ago(job.created, now));
  const last = job.last_rounds[job.last_rounds.length - 1];
  if (last) line.append(" · last loss " + formatLoss(last.loss));
  card.append(line);
  if (job.round_job) card.append(element("p", "Round in flight: graph job " + job.round_job));
  if (job.last_rounds.length === 0) {
    card.append(element("p", "No round committed yet.", "empty"));
    return card;
  }
  const details = element("details");
  details.append(element("summary", "Its last rounds"), roundsTable(job.last_rounds));
  card.append(details);
  return card;
}

function renderTraining(training, now) {
  const cards = document.getElementById("training-jobs");
  const open = new Set([...cards.querySelectorAll("details[open]")]
    .map((details) => details.parentElement.dataset.job));
  cards.replaceChildren(...training.map((job) => {
    const card = trainingCard(job, now);
    const details = card.querySelector("details");
    if (details && open.has(job.id)) details.open = true;
    return card;
  }));
  document.getElementById("training-empty").hidden = training.length !== 0;
  document.getElementById("loss-figure").hidden = training.length === 0;
}

// -- charts -------------------------------------------------------------------------------------

function chartOr(id, note, make) {
  if (typeof Chart === "undefined") {
    document.getElementById(note).textContent =
      "Charts are unavailable: the node could not serve Chart.js (install libjs-chart.js).";
    return null;
  }
  if (!charts[id]) charts[id] = new Chart(document.getElementById(id), make());
  return charts[id];
}

function barOptions(stacked) {
  return {
    type: "bar", data: { labels: [], datasets: [] },
    options: { animation: false, responsive: true, maintainAspectRatio: false,
               scales: { x: { stacked }, y: { stacked, beginAtZero: true,
                                              ticks: { precision: 0 } } } },
  };
}

function sum(values) {
  return values.reduce((total, value) => total + value, 0);
}

function renderHistory(history) {
  const labels = [];
  for (let i = 0; i < history.minutes; ++i) labels.push(minuteLabel(history.first_minute + 60 * i));
  const zeros = () => new Array(history.minutes).fill(0);
  const byKind = {};
  const verdicts = { accepted: zeros(), rejected: zeros() };
  for (const [name, counts] of Object.entries(history.series)) {
    const [verdict, kind] = name.split(" ");
    if (!(verdict in verdicts)) continue;
    counts.forEach((count, i) => { verdicts[verdict][i] += count; });
    if (verdict === "accepted") byKind[kind] = counts;
  }
  const throughput = chartOr("throughput-chart", "throughput-note", () => barOptions(true));
  if (throughput) {
    throughput.data.labels = labels;
    throughput.data.datasets = Object.keys(byKind).sort().map((kind) => ({
      label: kind, data: byKind[kind], backgroundColor: KIND_COLORS[kind] || "#777" }));
    throughput.update();
    document.getElementById("throughput-note").textContent = sum(Object.values(byKind).map(sum))
      ? "" : "No result was accepted in the last hour.";
  }
  const verdictChart = chartOr("verdict-chart", "verdict-note", () => barOptions(false));
  if (verdictChart) {
    verdictChart.data.labels = labels;
    verdictChart.data.datasets = [
      { label: "accepted", data: verdicts.accepted, backgroundColor: "#1e7a34" },
      { label: "rejected", data: verdicts.rejected, backgroundColor: "#b3261e" },
    ];
    verdictChart.update();
    document.getElementById("verdict-note").textContent =
      sum(verdicts.accepted) + sum(verdicts.rejected) ? "" : "No verdict in the last hour.";
  }
}

function renderLoss(training) {
  if (training.length === 0) return;
  const chart = chartOr("loss-chart", "loss-note", () => ({
    type: "line", data: { datasets: [] },
    options: { animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
               scales: { x: { type: "linear", title: { display: true, text: "round" },
                              ticks: { precision: 0 } },
                         y: { title: { display: true, text: "loss" } } } },
  }));
  if (!chart) return;
  chart.data.datasets = training.map((job, i) => ({
    label: job.id, borderColor: LOSS_COLORS[i % LOSS_COLORS.length], pointRadius: 2,
    data: job.last_rounds.filter((round) => round.loss !== null)
      .map((round) => ({ x: round.round, y: round.loss })),
  }));
  chart.update();
  document.getElementById("loss-note").textContent =
    training.some((job) => job.last_rounds.length) ? "" : "No round committed yet.";
}

// -- polling ------------------------------------------------------------------------------------

function render(state) {
  renderHeader(state);
  renderSummary(state.counts);
  renderHistory(state.history);
  renderTraining(state.training, state.now);
  renderLoss(state.training);
  fillTable("jobs", state.jobs, (job) => jobRow(job, state.now));
  const rounds = new Map(state.training.filter((job) => job.round_job)
    .map((job) => [job.round_job, job.id]));
  fillTable("volunteers", state.volunteers, (volunteer) => volunteerRow(volunteer, rounds));
  fillTable("verdicts", state.verdicts, verdictRow);
}

function showFreshness() {
  const note = document.getElementById("freshness");
  const age = (Date.now() - lastSuccess) / 1000;
  const stale = lastSuccess === 0 || age > 3 * POLL_MS / 1000;
  note.classList.toggle("stale", stale);
  if (lastSuccess === 0) note.textContent = "Waiting for the node's first answer…";
  else note.textContent = stale ? "The node has not answered for " + duration(age) +
    "; showing what it said at " + new Date(lastSuccess).toLocaleTimeString() + "."
    : "Updates by itself every " + POLL_MS / 1000 + " seconds.";
}

async function poll() {
  try {
    const response = await fetch("/dashboard.json", { cache: "no-store" });
    if (!response.ok) throw new Error("HTTP " + response.status);
    render(await response.json());
    lastSuccess = Date.now();
  } catch (error) {
    console.warn("dashboard: " + error);
  }
  showFreshness();
  setTimeout(poll, POLL_MS);
}

poll();
