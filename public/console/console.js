/**
 * The console's one script, served as a static file at /console/console.js (script-src 'self'; src/server/static-files.ts).
 * Everything works without it; with it: the delivery list and a delivery's page follow the live
 * stream (server-sent events whose data is HTML rendered by the server, escaped there), a
 * manifest file chosen is shown in the text area, the problems of a form get the focus; in the
 * workspace the messages follow their stream, a select or a checkbox sends its choice at once
 * (a confirmation first when the element asks for one), Enter sends a text field that sends on
 * Enter, a link button also tells the app, and a modal gets the focus (Escape closes it); Copy
 * puts a delivery's curl command on the clipboard.
 */
'use strict';
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
  var tl = document.getElementById('timeline');
  if (tl) {
    var said = document.getElementById('ws-status');
    stream(tl.dataset.stream, 'timeline', function (d) {
      var focused = document.activeElement && tl.contains(document.activeElement) ? document.activeElement : null;
      var key = focused && (focused.closest('li') || {}).id;
      tl.innerHTML = d.html;
      if (said) said.textContent = 'Messages updated.';
      if (key && document.getElementById(key)) {
        var again = document.getElementById(key).querySelector('button, select, input, textarea, a');
        if (again) again.focus();
      }
      tl.lastElementChild && tl.lastElementChild.scrollIntoView({ block: 'nearest' });
    }, said || tl);
  }
  // an element's button: submit with it, or (a confirmation first) open its dialog
  function send(go, form) {
    if (!go || !form) return;
    var dialog = go.getAttribute('popovertarget');
    if (dialog && document.getElementById(dialog) && document.getElementById(dialog).showPopover) document.getElementById(dialog).showPopover();
    else if (!dialog) form.requestSubmit(go);
  }
  // a select, a checkbox sends its choice at once; a text field with data-enter sends on Enter
  document.addEventListener('change', function (e) {
    var sel = e.target;
    if (!sel || !sel.dataset || !sel.dataset.submit || !sel.value) return;
    send(document.getElementById(sel.dataset.submit), sel.form);
  });
  document.addEventListener('keydown', function (e) {
    var field = e.target;
    if (e.key !== 'Enter' || !field || !field.dataset || !field.dataset.enter) return;
    e.preventDefault();
    send(document.getElementById(field.dataset.enter), field.form);
  });
  // a link button opens its URL and tells the app (BLOCK_INTERACTION), as the platform does
  document.addEventListener('click', function (e) {
    var a = e.target && e.target.closest && e.target.closest('a[data-act]');
    var form = a && a.closest('form');
    if (!form) return;
    var body = new URLSearchParams(new FormData(form));
    body.set('act', a.dataset.act);
    fetch(form.action, { method: 'POST', body: body, credentials: 'same-origin', redirect: 'manual' });
  });
  // the composer's completion: the commands of installed apps matching what is typed after '/'
  var box = document.getElementById('message');
  var suggest = document.getElementById('suggest');
  if (box && suggest) {
    var offer = function () {
      var v = box.value;
      var any = false;
      Array.prototype.forEach.call(suggest.children, function (b) {
        var on = v.charAt(0) === '/' && v.indexOf(' ') < 0 && b.dataset.command.indexOf(v) === 0 && b.dataset.command !== v;
        b.hidden = !on;
        any = any || on;
      });
      suggest.hidden = !any;
    };
    box.addEventListener('input', offer);
    suggest.addEventListener('click', function (e) {
      var b = e.target.closest('button');
      if (!b) return;
      box.value = b.dataset.command + ' ';
      offer();
      box.focus();
    });
  }
  // a dynamic select asks the app for its options when it is first used
  var csrf = document.querySelector('meta[name=csrf]');
  function loadMenu(sel) {
    if (!sel.dataset || !sel.dataset.menu || sel.dataset.loaded || !sel.form) return;
    sel.dataset.loaded = '1';
    var body = new URLSearchParams({ csrf: csrf ? csrf.content : '', onAction: sel.dataset.menu, query: '' });
    fetch(/actions$/.test(sel.form.action) ? sel.form.action.replace(/actions$/, 'menu') : sel.form.action + '/menu', { method: 'POST', body: body, credentials: 'same-origin' })
      .then(function (r) { return r.ok ? r.json() : { options: [] }; })
      .then(function (d) {
        while (sel.options.length > 1) sel.remove(1);
        d.options.forEach(function (o) { sel.add(new Option(o.label, o.value)); });
        if (d.message && document.getElementById('ws-status')) document.getElementById('ws-status').textContent = d.message;
      });
  }
  document.addEventListener('focusin', function (e) { if (e.target && e.target.tagName === 'SELECT') loadMenu(e.target); });
  document.addEventListener('pointerdown', function (e) { if (e.target && e.target.tagName === 'SELECT') loadMenu(e.target); });
  var modal = document.getElementById('modal');
  if (modal) {
    var first = modal.querySelector('[autofocus]') || modal.querySelector('input:not([type=hidden]), select, textarea, button:not([hidden])');
    if (first) first.focus();
    modal.addEventListener('keydown', function (e) {
      if (e.key !== 'Escape' || modal.querySelector(':popover-open')) return; // Escape closes an open confirmation first
      var close = modal.querySelector('button[value=close]');
      if (close) close.click();
    });
  } else if (box && !location.hash) box.focus();
  var file = document.getElementById('file');
  var area = document.getElementById('manifest');
  if (file && area) {
    file.addEventListener('change', function () {
      var f = file.files && file.files[0];
      if (f) f.text().then(function (t) { area.value = t; });
    });
  }
  // Copy (a curl command): to the clipboard, else the text selected for the person to copy
  document.addEventListener('click', function (e) {
    var b = e.target && e.target.closest && e.target.closest('button[data-copy]');
    var src = b && document.getElementById(b.dataset.copy);
    if (!src) return;
    var said = document.getElementById('copy-status');
    var selectIt = function () {
      var range = document.createRange();
      range.selectNodeContents(src);
      var sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      if (said) said.textContent = 'Selected: copy it with your keyboard.';
    };
    if (!navigator.clipboard) return selectIt();
    navigator.clipboard.writeText(src.textContent).then(function () { if (said) said.textContent = 'Copied.'; }, selectIt);
  });
  var problems = document.getElementById('problems');
  if (problems) {
    problems.tabIndex = -1;
    problems.focus();
  }
})();
