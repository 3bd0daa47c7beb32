/*
 * The clone landing page's script: on "Clone", post the form's fields to the store API with
 * the XSRF header from the `_xsrf` cookie, then open the new file in JupyterLab, or show why not.
 * Plain browser JavaScript, served as it is; every URL it uses is relative to the page.
 */
/* global document, window, fetch, URLSearchParams */
(function () {
  'use strict';

  var form = document.getElementById('clone-form');
  if (!form) return;
  var button = document.getElementById('clone-button');
  var status = document.getElementById('clone-status');
  var errorBox = document.getElementById('clone-error');

  /** The `_xsrf` cookie as tornado set it (not percent-encoded). */
  function xsrfCookie() {
    var match = document.cookie.match(/(?:^|;\s*)_xsrf=([^;]*)/);
    return match ? match[1] : '';
  }

  /** A token in this page's own URL (a `?token=` link) authenticates the POST as well. */
  function urlToken() {
    return new URLSearchParams(window.location.search).get('token') || '';
  }

  function showError(message) {
    status.textContent = '';
    errorBox.textContent = message;
    errorBox.hidden = false;
    button.disabled = false;
  }

  /** The path segments of a contents path, each percent-encoded for a URL. */
  function encodePath(apiPath) {
    return apiPath.split('/').map(encodeURIComponent).join('/');
  }

  form.addEventListener('submit', function (event) {
    event.preventDefault();
    button.disabled = true;
    errorBox.hidden = true;
    errorBox.textContent = '';
    status.textContent = 'Cloning…';

    var body = {};
    var inputs = form.querySelectorAll('input[name]');
    for (var i = 0; i < inputs.length; i++) {
      var value = inputs[i].value.trim();
      if (value !== '') body[inputs[i].name] = value;
    }
    var headers = { 'Content-Type': 'application/json', 'X-XSRFToken': xsrfCookie() };
    var token = urlToken();
    if (token) headers.Authorization = 'token ' + token;

    fetch(form.dataset.api, {
      method: 'POST',
      credentials: 'same-origin',
      headers: headers,
      body: JSON.stringify(body)
    })
      .then(function (response) {
        return response.text().then(function (text) {
          var reply = null;
          try {
            reply = JSON.parse(text);
          } catch {
            reply = null;
          }
          if (response.ok && reply && typeof reply.path === 'string') {
            status.textContent = 'Cloned to ' + reply.path + '. Opening JupyterLab…';
            var target = form.dataset.lab + encodePath(reply.path);
            window.location.assign(target + (token ? '?token=' + encodeURIComponent(token) : ''));
            return;
          }
          var message = reply && typeof reply.message === 'string' ? reply.message : '';
          showError(
            'The clone failed (HTTP ' + response.status + ')' + (message ? ': ' + message : '.')
          );
        });
      })
      .catch(function () {
        showError('The clone failed: the server could not be reached.');
      });
  });
})();
