/**
 * The HTTP API of lessons and classes (web/teaching_api.py). Like api.js: JSON both ways, and a
 * failed call throws an ApiError carrying the server's own reason (and its `problems`, for the
 * lesson editor) so the page can show it. Who calls says so in a header: X-Sandbox-Token (a
 * walkthrough), X-Instructor-Token, X-Student-Token.
 */
import {ApiError} from './api.js';

export class TeachingApi {
  constructor(base = '') {
    this.base = base;
  }

  async _call(method, path, {body, headers = {}} = {}) {
    const all = {Accept: 'application/json', ...headers};
    // Every write is JSON, also without a body: the server refuses other writes (no cross-site forms).
    if (body !== undefined || method !== 'GET') all['Content-Type'] = 'application/json';
    let response;
    try {
      response = await fetch(this.base + path, {method, headers: all, body: body === undefined ? undefined : JSON.stringify(body)});
    } catch (error) {
      throw new ApiError(0, `the server cannot be reached (${error.message})`);
    }
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    if (!response.ok) throw new ApiError(response.status, data?.error ?? `${response.status} ${response.statusText}`, data);
    return data;
  }

  // -- lessons and walkthroughs ---------------------------------------------------------------------
  lessons() {
    return this._call('GET', '/api/lessons');
  }

  lesson(id) {
    return this._call('GET', `/api/lessons/${lessonPath(id)}`);
  }

  /** A new walkthrough: the sandbox {id, token, mode, lesson, cluster} the page then shows. */
  startWalkthrough(id) {
    return this._call('POST', `/api/lessons/${lessonPath(id)}/walkthrough`);
  }

  /** action: continue | answer | back | restart | try; back, restart and try answer a new sandbox. */
  lessonAction(sandbox, token, action, body = {}) {
    return this._call('POST', `/api/sandboxes/${encodeURIComponent(sandbox)}/lesson/${action}`,
      {body, headers: {'X-Sandbox-Token': token}});
  }

  // -- authoring ------------------------------------------------------------------------------------
  check(text) {
    return this._call('POST', '/api/lessons/check', {body: {text}});
  }

  saveLesson(instructorToken, {id, text, instructor}) {
    return this._call('POST', '/api/instructor/lessons', {body: {id, text, instructor},
      headers: {'X-Instructor-Token': instructorToken}});
  }

  dryRun(instructorToken, text) {
    return this._call('POST', '/api/instructor/lessons/dry-run', {body: {text},
      headers: {'X-Instructor-Token': instructorToken}});
  }

  // -- classes --------------------------------------------------------------------------------------
  openClass(instructorToken, instructor) {
    return this._call('POST', '/api/classes', {body: {instructor}, headers: {'X-Instructor-Token': instructorToken}});
  }

  getClass(instructorToken, classId) {
    return this._call('GET', `/api/classes/${encodeURIComponent(classId)}`, {headers: {'X-Instructor-Token': instructorToken}});
  }

  /** Is the server keeping up with the class (web/server_load.py)? */
  getClassLoad(instructorToken, classId) {
    return this._call('GET', `/api/classes/${encodeURIComponent(classId)}/load`,
      {headers: {'X-Instructor-Token': instructorToken}});
  }

  /** action: session ({lesson} or {} for a free demo) | pause ({paused}) | continue | fork. */
  classAction(instructorToken, classId, action, body = {}) {
    return this._call('POST', `/api/classes/${encodeURIComponent(classId)}/${action}`, {body,
      headers: {'X-Instructor-Token': instructorToken}});
  }

  joinClass(code, name) {
    return this._call('POST', '/api/classes/join', {body: {code, name}});
  }

  /** The class session's records for a member (student or instructor token): {records, next}. */
  classRecords(classId, token, session, since, limit = 1000) {
    const q = `session=${encodeURIComponent(session)}&since=${since}&limit=${limit}`;
    return this._call('GET', `/api/classes/${encodeURIComponent(classId)}/records?${q}`, {headers: {'X-Student-Token': token}});
  }
}

/** Uploaded lessons have ids like "ada/mine": keep the slash, escape the rest. */
function lessonPath(id) {
  return String(id).split('/').map(encodeURIComponent).join('/');
}
