#!/usr/bin/env node
// An All Fours bot in JavaScript (Node.js, no packages), outside the project:
//   python -m eval "exec:node examples/outside_bot.js" rule_based --boards 100
// One JSON line a decision on standard input, one JSON line answered on standard output
// (docs/outside_bots.md). It reads the legal moves only: it stands or gives one when it may,
// and plays the first legal card (the lowest by card id: suits C D H S, ranks 2..A).
const readline = require("readline");

const input = readline.createInterface({ input: process.stdin });
input.on("line", (line) => {
  const message = JSON.parse(line);
  if (message.type !== "act") return; // other types may come in later versions: skip them
  const moves = message.legal.map((legal) => legal.move);
  const keep = moves.find((move) => move === "STAND" || move === "GIVE_ONE");
  process.stdout.write(JSON.stringify(keep ? { move: keep } : { action: message.legal[0].id }) + "\n");
});
