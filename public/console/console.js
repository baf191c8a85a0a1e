/**
 * The console's one script, served as a static file at /console/console.js (script-src 'self'; src/server/static-files.ts).
 * Everything works without it but a dynamic select, whose options only it can ask for; with it:
 * the delivery list and a delivery's page follow the live
 * stream (server-sent events whose data is HTML rendered by the server, escaped there), a
 * manifest file chosen is shown in the text area, the problems of a form get the focus; in the
 * workspace the messages follow their stream, a dynamic select offers the app's options as the
 * person types (a combobox), a select or a checkbox sends its choice at once
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
      var menu = focused && focused.dataset.menu && focused.getAttribute('role') === 'combobox' ? focused : null;
      tl.innerHTML = d.html;
      if (said) said.textContent = 'Messages updated.';
      if (key && document.getElementById(key)) {
        var item = document.getElementById(key);
        var again = (menu && item.querySelector('[role=combobox][data-menu="' + menu.dataset.menu + '"]')) || item.querySelector('button, select, input, textarea, a');
        if (again && menu && again.dataset.menu === menu.dataset.menu) again.value = menu.value; // what was typed stays
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
    if (!sel || !sel.dataset || !sel.dataset.submit || !sel.value || comboOf(sel)) return; // a combobox sends when an option is chosen
    send(document.getElementById(sel.dataset.submit), sel.form);
  });
  document.addEventListener('keydown', function (e) {
    var field = e.target;
    if (e.key !== 'Enter' || !field || !field.dataset || !field.dataset.enter || e.defaultPrevented) return;
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
  // a dynamic select is a combobox: opened, it shows the app's options; typed in, it asks again with
  // the text (the daemon asks the app: DYNAMIC_MENU's query), and shows the latest answer; an option
  // chosen (click, or arrows and Enter) goes in the hidden field, and is sent at once where the
  // element sends on change
  var csrf = document.querySelector('meta[name=csrf]');
  var asked = 0;
  var typing = null;
  function comboOf(el) {
    if (!el || !el.dataset || !el.dataset.menu || !el.form || el.getAttribute('role') !== 'combobox') return null;
    return { input: el, list: document.getElementById(el.getAttribute('aria-controls')), value: document.getElementById(el.dataset.value) };
  }
  function menuUrl(form) {
    return /actions$/.test(form.action) ? form.action.replace(/actions$/, 'menu') : form.action + '/menu';
  }
  function closeList(c) {
    c.list.hidden = true;
    c.input.setAttribute('aria-expanded', 'false');
    c.input.removeAttribute('aria-activedescendant');
  }
  function showList(c, options) {
    c.list.textContent = '';
    options.forEach(function (o, i) {
      var li = document.createElement('li');
      li.setAttribute('role', 'option');
      li.setAttribute('aria-selected', 'false');
      li.id = c.list.id + '-' + i;
      li.dataset.value = o.value;
      li.textContent = o.label;
      c.list.appendChild(li);
    });
    if (!options.length) {
      var none = document.createElement('li');
      none.setAttribute('role', 'option');
      none.setAttribute('aria-disabled', 'true');
      none.className = 'none';
      none.textContent = c.input.value ? 'No match' : 'No options';
      c.list.appendChild(none);
    }
    c.list.hidden = false;
    c.input.setAttribute('aria-expanded', 'true');
    c.input.removeAttribute('aria-activedescendant');
  }
  function askMenu(c) {
    var n = ++asked; // only the answer to the latest question is shown
    var typed = c.input.value === c.input.dataset.chosen ? '' : c.input.value;
    var body = new URLSearchParams({ csrf: csrf ? csrf.content : '', onAction: c.input.dataset.menu, query: typed });
    c.input.setAttribute('aria-busy', 'true');
    fetch(menuUrl(c.input.form), { method: 'POST', body: body, credentials: 'same-origin' })
      .then(function (r) { return r.ok ? r.json() : { options: [] }; }, function () { return { options: [] }; })
      .then(function (d) {
        if (n !== asked || !document.body.contains(c.input)) return;
        c.input.removeAttribute('aria-busy');
        if (document.activeElement === c.input) showList(c, d.options || []);
        var said = document.getElementById('ws-status');
        if (d.message && said) said.textContent = d.message;
      });
  }
  function choose(c, li) {
    if (!li || li.getAttribute('aria-disabled') === 'true') return;
    c.value.value = li.dataset.value;
    c.input.value = c.input.dataset.chosen = li.textContent;
    c.input.setCustomValidity('');
    closeList(c);
    if (c.input.dataset.submit) send(document.getElementById(c.input.dataset.submit), c.input.form);
  }
  function moveActive(c, by) {
    var opts = Array.prototype.filter.call(c.list.children, function (li) { return li.getAttribute('aria-disabled') !== 'true'; });
    if (!opts.length) return;
    var at = opts.findIndex(function (li) { return li.getAttribute('aria-selected') === 'true'; });
    var next = opts[(at + by + opts.length) % opts.length] || opts[0];
    if (at < 0 && by < 0) next = opts[opts.length - 1];
    opts.forEach(function (li) { li.setAttribute('aria-selected', li === next ? 'true' : 'false'); });
    c.input.setAttribute('aria-activedescendant', next.id);
    next.scrollIntoView({ block: 'nearest' });
  }
  document.addEventListener('focusin', function (e) {
    var c = comboOf(e.target);
    if (!c) return;
    if (c.input.value && c.input.value === c.input.dataset.chosen) c.input.select(); // typing replaces the choice shown
    askMenu(c);
  });
  document.addEventListener('focusout', function (e) { var c = comboOf(e.target); if (c) closeList(c); });
  document.addEventListener('click', function (e) {
    var c = comboOf(e.target);
    if (c && c.list.hidden && !c.input.hasAttribute('aria-busy')) askMenu(c);
    var li = e.target && e.target.closest && e.target.closest('[role=listbox] [role=option]');
    var owner = li && document.querySelector('[aria-controls="' + li.parentNode.id + '"]');
    if (owner) choose(comboOf(owner), li);
  });
  // a click on an option must not take the focus from the field first (that would close the list)
  document.addEventListener('mousedown', function (e) {
    if (e.target && e.target.closest && e.target.closest('[role=listbox]')) e.preventDefault();
  });
  document.addEventListener('input', function (e) {
    var c = comboOf(e.target);
    if (!c) return;
    c.value.value = ''; // what is typed is a question, not a choice
    if (c.input.required && c.input.value) c.input.setCustomValidity('Choose one of the options.');
    else c.input.setCustomValidity('');
    clearTimeout(typing);
    typing = setTimeout(function () { askMenu(c); }, 150);
  });
  // in the capture phase: Escape closes the list before a modal hears it, Enter chooses instead of submitting
  document.addEventListener('keydown', function (e) {
    var c = comboOf(e.target);
    if (!c) return;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      if (c.list.hidden) askMenu(c);
      else moveActive(c, e.key === 'ArrowDown' ? 1 : -1);
    } else if (e.key === 'Enter') {
      var active = document.getElementById(c.input.getAttribute('aria-activedescendant') || '');
      if (active || !c.list.hidden) {
        e.preventDefault();
        e.stopPropagation();
        if (active) choose(c, active);
      }
    } else if (e.key === 'Escape' && !c.list.hidden) {
      e.preventDefault();
      e.stopPropagation();
      closeList(c);
    }
  }, true);
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
