/**
 * The HTTP API of a sandbox (JSON both ways). Every call on a sandbox sends its token in
 * X-Sandbox-Token. A failed call throws an ApiError carrying the server's own reason
 * ({"error": "..."}) so the page can show it; a fault the cluster refuses (409) is an answer,
 * not an exception: {ok: false, error, seq}.
 */
export class ApiError extends Error {
  constructor(status, message, body = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

export class Api {
  constructor(base = '') {
    this.base = base;
  }

  async _call(method, path, {body, token, accept = []} = {}) {
    const headers = {Accept: 'application/json'};
    // Every write is JSON, also without a body: the server refuses other writes (no cross-site forms).
    if (body !== undefined || method !== 'GET') headers['Content-Type'] = 'application/json';
    if (token) headers['X-Sandbox-Token'] = token;
    let response;
    try {
      response = await fetch(this.base + path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body)});
    } catch (error) {
      throw new ApiError(0, `the server cannot be reached (${error.message})`);
    }
    if (response.status === 204) return null;
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    if (!response.ok && !accept.includes(response.status)) {
      const reason = data?.error ?? `${response.status} ${response.statusText}`;
      throw new ApiError(response.status, reason, data);
    }
    return data;
  }

  /** Create a sandbox; cluster: {brokers, topics, config}, every key optional. */
  createSandbox(cluster = {}) {
    return this._call('POST', '/api/sandboxes', {body: {cluster}});
  }

  getSandbox(id, token) {
    return this._call('GET', `/api/sandboxes/${encodeURIComponent(id)}`, {token});
  }

  deleteSandbox(id, token) {
    return this._call('DELETE', `/api/sandboxes/${encodeURIComponent(id)}`, {token});
  }

  /** Apply a fault: resolves {ok: true, message, seq} or {ok: false, error, seq} (refused). */
  fault(id, token, op, fields = {}) {
    return this._call('POST', `/api/sandboxes/${encodeURIComponent(id)}/faults`,
      {token, body: {op, ...fields}, accept: [409]});
  }

  snapshot(id, token) {
    return this._call('GET', `/api/sandboxes/${encodeURIComponent(id)}/snapshot`, {token});
  }

  /** Records with seq >= since, in order: {records, next}. */
  records(id, token, since, limit = 1000) {
    return this._call('GET', `/api/sandboxes/${encodeURIComponent(id)}/records?since=${since}&limit=${limit}`, {token});
  }

  vocabulary() {
    return this._call('GET', '/api/vocabulary');
  }
}
