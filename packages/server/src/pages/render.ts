import type { ErrorRequestHandler, NextFunction, Request, Response } from 'express';
import type { Logger } from '../gateway/logger';
import { toHttpError } from '../http/errors';

/**
 * Pages are self-contained: script and style only from our own static files, requests only to
 * our own origin, no framing by other sites, no form posts anywhere.
 */
const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'self'"
].join('; ');

/** A page of the clone confirmation: what is cloned, and the form that clones it. */
export interface IClonePage {
  /** The API route, relative to the page. */
  api: string;
  /** What is shown about the source: label and value. */
  source: [string, string][];
  /** The request fields posted as they are. */
  fields: Record<string, string>;
  /** The proposed target path (editable). */
  target: string;
}

export function clonePage(page: IClonePage): string {
  const rows = page.source
    .map(
      ([label, value]) => `<dt>${escapeHtml(label)}</dt><dd><code>${escapeHtml(value)}</code></dd>`
    )
    .join('');
  const hidden = Object.entries(page.fields)
    .map(
      ([name, value]) =>
        `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`
    )
    .join('');
  return `<h1>Clone a file into your server</h1>
<p>This copies the following file into your Jupyter server. Nothing is overwritten: if the name is taken, the copy gets a number.</p>
<dl class="source">${rows}</dl>
<form id="clone-form" data-api="${escapeHtml(page.api)}" data-lab="../lab/tree/">
${hidden}
<label for="target_path">Save as (path in your server)</label>
<input id="target_path" name="target_path" type="text" value="${escapeHtml(page.target)}" autocomplete="off" spellcheck="false">
<p class="warning">Only clone files from sources you recognise and trust: a notebook runs code when you run its cells.</p>
<div class="actions"><button id="clone-button" type="submit">Clone</button> <a href="../lab">Cancel</a></div>
</form>
<p id="clone-status" role="status" aria-live="polite"></p>
<p id="clone-error" class="error" role="alert" hidden></p>
<noscript><p class="error">This page needs JavaScript to clone.</p></noscript>
<script src="static/landing.js" defer></script>`;
}

/** Send a whole HTML page with its own headers (a script-free CSP but for our static files). */
export function sendPage(
  response: Response,
  status: number,
  page: { title: string; body: string }
): void {
  response.status(status);
  response.setHeader('Content-Type', 'text/html; charset=utf-8');
  response.setHeader('Content-Security-Policy', PAGE_CSP);
  response.setHeader('X-Content-Type-Options', 'nosniff');
  // The page's own POST must carry an Origin, which `no-referrer` would blank for same-origin.
  response.setHeader('Referrer-Policy', 'same-origin');
  response.setHeader('Cache-Control', 'no-store');
  response.end(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(page.title)} · jupyter-store</title>
<link rel="stylesheet" href="static/landing.css">
</head>
<body>
<main>
${page.body}
</main>
</body>
</html>
`);
}

/** Errors become an HTML page with the status and the message, never a stack trace. */
export function pageErrorHandler(log: Logger | undefined): ErrorRequestHandler {
  return (error: unknown, _request: Request, response: Response, _next: NextFunction) => {
    let status = 500;
    let message = 'Something went wrong on the server; the clone was not attempted.';
    const answer = toHttpError(error);
    if (answer) {
      status = answer.status;
      message = answer.message;
    } else {
      log?.error({ err: error }, 'landing page failed');
    }
    if (response.headersSent) {
      response.destroy();
      return;
    }
    sendPage(response, status, {
      title: 'Cannot clone',
      body: `<h1>Cannot clone</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
<p class="status-code">HTTP ${status}</p>
<p><a href="../lab">Open JupyterLab</a></p>`
    });
  };
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;'
};

/** Escape text for HTML element content and double- or single-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, char => HTML_ESCAPES[char]);
}
