// Package e2e holds the end-to-end tests of the web app: the real static
// server, the chat page (web/index.html), the <wasmllm-chat> element and the
// service worker, driven in headless Chromium through
// internal/testkit/browsertest, with replies checked against cmd/generate.
//
//	go test ./e2e/
//
// Screenshots go to build/screenshots/. The tests skip when Chromium is
// missing (set WASMLLM_CHROMIUM to its path).
package e2e
