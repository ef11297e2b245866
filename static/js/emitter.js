/** A tiny event emitter: `on` returns the function that unsubscribes. */
export class Emitter {
  constructor() {
    this._handlers = new Map();
  }

  on(type, handler) {
    if (!this._handlers.has(type)) this._handlers.set(type, new Set());
    this._handlers.get(type).add(handler);
    return () => this._handlers.get(type)?.delete(handler);
  }

  emit(type, payload) {
    for (const handler of [...(this._handlers.get(type) ?? [])]) handler(payload);
  }
}
