// stream.js: what the local engine (wasmllm.js) and the remote one
// (remote.js) share: their error type and the async iterable a streaming
// create() resolves to.

/** An error from the engine, with a stable `code`. */
export class WasmLLMError extends Error {
	constructor(code, message, details) {
		super(message);
		this.name = "WasmLLMError";
		this.code = code;
		this.details = details;
	}
}

/** abortError is the error of a cancelled request. */
export const abortError = () => new WasmLLMError("aborted", "the request was aborted");

// Stream is the async iterable a streaming create() resolves to. Leaving
// a for-await loop early (break, return, a throw) cancels the request, and
// so does stream.controller.abort(), as with OpenAI's client.
export class Stream {
	constructor(onCancel) {
		this.queue = [];
		this.waiting = null;
		this.done = false;
		this.error = null;
		this._onCancel = onCancel;
		/** Aborting it cancels the request; the stream then ends with an "aborted" error. */
		this.controller = new AbortController();
		this.controller.signal.addEventListener("abort", () => this.cancel(abortError()), { once: true });
	}

	push(chunk) {
		if (this.done) return;
		if (this.waiting) {
			const w = this.waiting;
			this.waiting = null;
			w.resolve({ value: chunk, done: false });
		} else {
			this.queue.push(chunk);
		}
	}

	end(err) {
		if (this.done) return;
		this.done = true;
		this.error = err || null;
		if (this.waiting) {
			const w = this.waiting;
			this.waiting = null;
			if (err) {
				this.error = null;
				w.reject(err);
			} else {
				w.resolve({ value: undefined, done: true });
			}
		}
	}

	// cancel stops the request; with err, the chunks not yet read are
	// dropped and the next read rejects with it.
	cancel(err) {
		if (!this.done && this._onCancel) this._onCancel();
		if (err && !this.done) this.queue = [];
		this.end(err);
	}

	next() {
		if (this.queue.length) return Promise.resolve({ value: this.queue.shift(), done: false });
		if (this.done) {
			if (this.error) {
				const e = this.error;
				this.error = null;
				return Promise.reject(e);
			}
			return Promise.resolve({ value: undefined, done: true });
		}
		return new Promise((resolve, reject) => { this.waiting = { resolve, reject }; });
	}

	[Symbol.asyncIterator]() {
		return {
			next: () => this.next(),
			return: (value) => {
				this.cancel(null);
				this.queue = [];
				return Promise.resolve({ value, done: true });
			},
		};
	}
}
