/**
 * `/console.js`: what script adds to the console's server-rendered pages (services/task-proxy/
 * README.md, "The console"). Every page works without it. With it: a task's page follows its new
 * log lines, status and runs while it is pending or running; the chat answers in place; the
 * offline banner follows the agent's state. It calls `POST /api/agent_proxy.php` like any client
 * (same origin, the session cookie) and writes text only through `textContent`.
 */
export const CLIENT_SCRIPT = `'use strict';
(function () {
  var API = '/api/agent_proxy.php';
  function call(fields) {
    return fetch(API, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { accept: 'application/json' },
      body: new URLSearchParams(fields),
    }).then(function (res) {
      return res.json().then(function (body) {
        return { status: res.status, body: body, source: res.headers.get('x-task-proxy-source') };
      });
    });
  }
  var banner = document.getElementById('agent-banner');
  function showOffline(offline) {
    if (!banner) return;
    if (offline) {
      banner.textContent = banner.getAttribute('data-offline');
      banner.hidden = false;
    } else {
      banner.hidden = true;
      banner.textContent = '';
    }
  }
  function pollStatus() {
    call({ action: 'status' }).then(function (a) {
      if (a.status === 401) { window.location.assign('/login.php'); return; }
      if (a.body && a.body.status) showOffline(a.body.status === 'offline');
    }, function () {});
  }
  setInterval(pollStatus, 5000);

  var live = document.getElementById('task-live');
  var logs = document.getElementById('logs');
  if (live && logs) {
    var taskId = live.getAttribute('data-task-id');
    var status = live.getAttribute('data-status');
    var levels = JSON.parse(logs.getAttribute('data-levels') || '{}');
    var lang = document.body.getAttribute('data-lang') === 'vi' ? 'vi-VN' : 'en-GB';
    var fmt = new Intl.DateTimeFormat(lang, { dateStyle: 'medium', timeStyle: 'medium', timeZone: 'UTC' });
    var seen = {};
    var items = logs.querySelectorAll('li[data-id]');
    for (var i = 0; i < items.length; i++) seen[items[i].getAttribute('data-id')] = true;
    var following = document.getElementById('following');
    var noLogs = document.getElementById('no-logs');
    var runsKey = '';
    var active = function (s) { return s === 'pending' || s === 'running'; };
    var appendLog = function (log) {
      if (seen[String(log.id)]) return;
      seen[String(log.id)] = true;
      var li = document.createElement('li');
      li.setAttribute('data-id', String(log.id));
      var time = document.createElement('time');
      time.setAttribute('datetime', log.created_at);
      time.textContent = fmt.format(new Date(log.created_at)) + ' UTC';
      var level = document.createElement('span');
      level.className = 'l-' + log.level;
      level.textContent = levels[log.level] || log.level;
      var text = document.createElement('span');
      text.className = 'text';
      text.textContent = log.message;
      li.appendChild(time); li.appendChild(level); li.appendChild(text);
      logs.appendChild(li);
      logs.scrollTop = logs.scrollHeight;
      if (noLogs) noLogs.hidden = true;
    };
    // The summary and the runs are the server's own rendering of the same task, fetched again
    // when the task or its runs change.
    var refreshSections = function () {
      return fetch(window.location.pathname + window.location.search, { credentials: 'same-origin' })
        .then(function (res) { return res.text(); })
        .then(function (text) {
          var doc = new DOMParser().parseFromString(text, 'text/html');
          var fresh = doc.getElementById('task-live');
          if (fresh) live.replaceWith(fresh);
          live = fresh || live;
        });
    };
    var tick = function () {
      call({ action: 'get_task', task_id: taskId }).then(function (a) {
        if (a.status === 401) { window.location.assign('/login.php'); return; }
        if (a.status !== 200) { setTimeout(tick, 3000); return; }
        showOffline(a.source === 'store');
        var newest = a.body.logs.slice().sort(function (x, y) { return x.id - y.id; });
        newest.forEach(appendLog);
        var key = a.body.task.status + '|' + a.body.runs.map(function (r) { return r.id + ':' + r.status; }).join(',');
        var changed = key !== runsKey;
        runsKey = key;
        status = a.body.task.status;
        var next = function () {
          if (active(status)) setTimeout(tick, 1000);
          else if (following) following.hidden = true;
        };
        if (changed) refreshSections().then(next, next); else next();
      }, function () { setTimeout(tick, 3000); });
    };
    if (active(status)) {
      if (following) following.hidden = false;
      runsKey = status;
      setTimeout(tick, 500);
    }
  }

  var chatForm = document.getElementById('chat-form');
  var chatLog = document.getElementById('chat-log');
  var chatError = document.getElementById('chat-error');
  if (chatForm && chatLog) {
    chatForm.addEventListener('submit', function (event) {
      event.preventDefault();
      var message = chatForm.elements.namedItem('message');
      var session = chatForm.elements.namedItem('session_id');
      var button = chatForm.querySelector('button');
      var text = message.value.trim();
      if (text === '') { message.focus(); return; }
      var say = function (who, what, cls) {
        var li = document.createElement('li');
        if (cls) li.className = cls;
        var strong = document.createElement('strong');
        strong.textContent = who + ': ';
        li.appendChild(strong);
        li.appendChild(document.createTextNode(what));
        chatLog.appendChild(li);
      };
      say(chatForm.getAttribute('data-you'), text, '');
      if (chatError) chatError.hidden = true;
      button.disabled = true;
      var fields = { action: 'chat', message: text };
      if (session.value) fields.session_id = session.value;
      call(fields).then(function (a) {
        button.disabled = false;
        if (a.status === 200) {
          session.value = a.body.session_id;
          say(chatForm.getAttribute('data-agent'), a.body.response, 'agent');
          message.value = '';
          message.focus();
        } else if (chatError) {
          chatError.textContent = a.body.detail || String(a.status);
          chatError.hidden = false;
        }
      }, function (err) {
        button.disabled = false;
        if (chatError) { chatError.textContent = String(err); chatError.hidden = false; }
      });
    });
  }
})();
`;
