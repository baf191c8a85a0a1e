/**
 * The console's one script, served by the daemon from memory at SCRIPT_PATH (script-src 'self').
 * Everything works without it; with it: the delivery list and a delivery's page follow the live
 * stream (server-sent events whose data is HTML rendered by the server, escaped there), a
 * manifest file chosen is shown in the text area, and the problems of a form get the focus.
 */
import crypto from 'node:crypto';

export const CONSOLE_SCRIPT = `'use strict';
(function () {
  function stream(url, name, onData, status) {
    if (!window.EventSource) return;
    var es = new EventSource(url);
    es.addEventListener(name, function (e) { onData(JSON.parse(e.data)); });
    es.addEventListener('open', function () { status.dataset.state = 'open'; });
    es.addEventListener('error', function () { status.dataset.state = 'reconnecting'; });
  }
  var live = document.getElementById('live');
  var rows = document.getElementById('rows');
  if (live && rows) {
    var count = 0;
    stream(live.dataset.stream, 'row', function (d) {
      var t = document.createElement('tbody');
      t.innerHTML = d.html;
      var tr = t.firstElementChild;
      var old = document.getElementById('d-' + d.id);
      if (old) old.replaceWith(tr);
      else {
        rows.prepend(tr);
        count++;
        if (rows.children.length > 300) rows.lastElementChild.remove();
        live.textContent = count + ' new since this page was loaded.';
      }
      var empty = document.getElementById('empty');
      if (empty) empty.remove();
    }, live);
  }
  var one = document.getElementById('delivery');
  if (one) {
    stream(one.dataset.stream, 'delivery', function (d) {
      var focused = document.activeElement && one.contains(document.activeElement) ? document.activeElement.textContent : null;
      one.innerHTML = d.html;
      var said = document.getElementById('one-status');
      var count = one.querySelector('h2');
      if (said && count) said.textContent = 'Updated: ' + count.textContent + '.';
      if (focused) {
        var again = Array.prototype.find.call(one.querySelectorAll('button'), function (b) { return b.textContent === focused; });
        if (again) again.focus();
      }
    }, one);
  }
  var file = document.getElementById('file');
  var area = document.getElementById('manifest');
  if (file && area) {
    file.addEventListener('change', function () {
      var f = file.files && file.files[0];
      if (f) f.text().then(function (t) { area.value = t; });
    });
  }
  var problems = document.getElementById('problems');
  if (problems) {
    problems.tabIndex = -1;
    problems.focus();
  }
})();
`;

export const SCRIPT_ETAG = `"${crypto.createHash('sha256').update(CONSOLE_SCRIPT).digest('base64url').slice(0, 22)}"`;
