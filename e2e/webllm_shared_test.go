package e2e

import (
	"encoding/json"
	"testing"

	"wasmllm/internal/testkit/browsertest"
)

// serviceWorkerPage is written as WebLLM's service-worker example writes
// its page: it registers a service worker whose script makes a
// ServiceWorkerMLCEngineHandler (not awaited), then
// CreateServiceWorkerMLCEngine and a streamed chat; the import names
// ./webllm.js instead of "@mlc-ai/web-llm".
const serviceWorkerPage = `<!doctype html>
<html>
  <body>
    <label id="init-label"> </label>
    <label id="generate-label"> </label>
` + observe + `
    <script type="module">
import * as webllm from "./webllm.js";

const registerServiceWorker = async () => {
  if ("serviceWorker" in navigator) {
    try {
      const registration = await navigator.serviceWorker.register(
        new URL("webllm-example-sw.js", import.meta.url),
        { type: "module" },
      );
      window.swRegistered = registration;
    } catch (error) {
      window.swError = String(error);
    }
  }
};
registerServiceWorker();

function setLabel(id, text) {
  document.getElementById(id).innerText = text;
}

async function main() {
  const initProgressCallback = (report) => {
    setLabel("init-label", report.text);
  };
  const engine = await webllm.CreateServiceWorkerMLCEngine(
    "` + webllmModel + `",
    { initProgressCallback: initProgressCallback },
  );
  window.engine = engine;
  const chunks = await engine.chat.completions.create({
    messages: [{ role: "user", content: "Tell me a story." }],
    stream: true,
    stream_options: { include_usage: true },
    max_tokens: 16,
    temperature: 0,
  });
  let reply = "";
  for await (const chunk of chunks) {
    reply += chunk.choices[0]?.delta.content || "";
    setLabel("generate-label", reply);
    if (chunk.usage) {
      console.log(chunk.usage);
    }
  }
  console.log(reply, await engine.getMessage());
}
main();
    </script>
  </body>
</html>
`

// serviceWorkerScript is the example's sw.js.
const serviceWorkerScript = `import { ServiceWorkerMLCEngineHandler } from "./webllm.js";

let handler;

self.addEventListener("activate", function (event) {
  handler = new ServiceWorkerMLCEngineHandler();
  console.log("Web-LLM Service Worker Activated");
});
`

func TestWebLLMServiceWorker(t *testing.T) {
	skipShort(t)
	webllmServiceWorker(t, func(t testing.TB) *browsertest.Browser { return browsertest.NewBrowser(t) })
}

func TestFirefoxWebLLMServiceWorker(t *testing.T) {
	skipShort(t)
	webllmServiceWorker(t, func(t testing.TB) *browsertest.Browser { return browsertest.NewFirefox(t) })
}

// webllmServiceWorker opens a page written as WebLLM's service-worker
// example in two tabs: the second tab's CreateServiceWorkerMLCEngine
// joins the first's engine (the server sees the shards once), both
// stream, and the service worker's ServiceWorkerMLCEngineHandler answers
// WebLLM's keep-alive with a heartbeat.
func webllmServiceWorker(t *testing.T, newBrowser func(testing.TB) *browsertest.Browser) {
	pages := map[string]string{"webllm-sw.html": serviceWorkerPage, "webllm-example-sw.js": serviceWorkerScript}
	srv := browsertest.StartServer(t, browsertest.ServerOptions{Models: webllmModels(t), Web: browsertest.WebDir(t, pages)})
	home := newBrowser(t)
	home.Open(srv.URL + "/test.html")
	shards := func() int { return len(srv.Requests("/models/" + webllmModel + "/shard-")) }
	var reused []bool
	var fetched []int
	for i := 0; i < 2; i++ {
		tab := home.NewTab()
		logged := openExample(t, tab, srv.URL+"/webllm-sw.html", 2)
		var usage webllmUsage
		if err := json.Unmarshal(logged[0][0], &usage); err != nil || usage.CompletionTokens == 0 {
			t.Errorf("tab %d: usage %s", i+1, logged[0][0])
		}
		var reply, message string
		json.Unmarshal(logged[1][0], &reply)
		json.Unmarshal(logged[1][1], &message)
		if reply == "" || reply != message {
			t.Errorf("tab %d: streamed %q, getMessage %q", i+1, reply, message)
		}
		var info sharedInfo
		tab.MustRun(`engine.engineOf().info.shared`, &info)
		if info.Mode != "shared-worker" {
			t.Errorf("tab %d: info.shared %+v", i+1, info)
		}
		reused = append(reused, info.Reused)
		fetched = append(fetched, shards())
		if i == 1 {
			// WebLLM's keep-alive, answered by the handler.
			var beat string
			if err := tab.Run(`(async () => {
				const reg = await navigator.serviceWorker.ready;
				const got = new Promise((ok) => navigator.serviceWorker.addEventListener("message", (e) => ok(e.data.kind + ":" + e.data.uuid)));
				reg.active.postMessage({kind: "keepAlive", uuid: "u1"});
				return await Promise.race([got, new Promise((ok) => setTimeout(() => ok("no answer"), 20000))]);
			})()`, &beat); err != nil || beat != "heartbeat:u1" {
				var swErr any
				tab.Run(`window.swError || null`, &swErr)
				t.Errorf("keepAlive: %q, %v (registration error: %v)", beat, err, swErr)
			}
		}
	}
	if len(reused) != 2 || reused[0] || !reused[1] {
		t.Errorf("reused: %v; want the second tab to join the first's engine", reused)
	}
	if fetched[0] == 0 || fetched[1] != fetched[0] {
		t.Errorf("shard requests after each tab: %v; want the first tab's only", fetched)
	}
}
