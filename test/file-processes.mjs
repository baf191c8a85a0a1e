// The processes one test file started, found and stopped together by test/run.mjs: when the file runs out
// of time, when it ends and left some running, and when the run itself is interrupted.
//
// A file's process leads a process group of its own (test/run.mjs starts it detached), which holds
// what it starts unless that makes a session of its own: the helpers that start a command's process
// group (test/helpers/packed.ts), `appreg test`'s apps (src/apptest/app-process.ts), and PostgreSQL's
// server, which pg_ctl starts in a new session and leaves to init. Those are found as descendants of
// the file's process while their parent lives, and by a mark in their environment (the variable
// test/run.mjs gives each file, which every process it starts inherits) once it does not.
import fs from 'node:fs';

/** The living processes: pid, parent, process group (/proc/<pid>/stat). */
function processes() {
  const all = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const f = fs.readFileSync(`/proc/${d}/stat`, 'utf8').split(') ').at(-1).split(' ');
      if (f[0] !== 'Z') all.push({ pid: Number(d), ppid: Number(f[1]), pgrp: Number(f[2]) });
    } catch {
      /* ended meanwhile */
    }
  }
  return all;
}

function carries(pid, mark) {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(mark);
  } catch {
    return false; // ended, or another user's
  }
}

/** The pids of what the file whose process is `leader` started, marked `mark` ("NAME=value") in their environment. */
export function fileProcesses(leader, mark) {
  const all = processes().filter((p) => p.pid !== process.pid);
  const found = new Set(all.filter((p) => p.pid === leader || p.pgrp === leader).map((p) => p.pid));
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all) {
      if (!found.has(p.pid) && found.has(p.ppid)) {
        found.add(p.pid);
        grew = true;
      }
    }
  }
  for (const p of all) if (!found.has(p.pid) && carries(p.pid, mark)) found.add(p.pid);
  return [...found];
}

/** SIGKILL to all of them, looked for again until none is left (one may start another meanwhile); what was killed. */
export function killFileProcesses(leader, mark) {
  const killed = [];
  for (let round = 0; round < 10; round++) {
    const pids = fileProcesses(leader, mark);
    if (pids.length === 0) break;
    for (const pid of pids) {
      const command = commandOf(pid);
      try {
        process.kill(pid, 'SIGKILL');
        if (!killed.some((k) => k.pid === pid)) killed.push({ pid, command });
      } catch {
        /* gone */
      }
    }
  }
  return killed;
}

/** The command line of `pid`, for a report ('' when it ended). */
export function commandOf(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}
