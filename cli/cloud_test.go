package cli

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dageval/dageval/fakes/cassette"
	"github.com/dageval/dageval/fakes/llmserver"
	"github.com/dageval/dageval/internal/netguard"
)

// Canary credentials of the cloud recordings: none may appear in any file
// a run writes, in its output, or in a cassette.
const (
	cloudKey     = "canary-cloud-key-41c7e9"
	cloudSecret  = "canary-cloud-secret-8d2f05"
	cloudSession = "canary-cloud-session-a63b19"
)

// cloudRoute is one cloud route recorded through `dageval run` against the
// local server and replayed with nothing configured.
type cloudRoute struct {
	name string
	tls  bool
	// providers and models are the suite's; base is the server's URL.
	providers func(base string) string
	models    string
	// record is the environment of the recording run (credentials, region,
	// project, endpoint); the replay has none of it.
	record func(base string) map[string]string
	api    string
	// streamType is the Content-Type of the streamed cell's answers.
	streamType string
}

var cloudRoutes = []cloudRoute{
	{
		name:      "bedrock",
		providers: func(base string) string { return `{bedrock: {kind: bedrock, base_url: "` + base + `"}}` },
		models:    `[bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0, {spec: bedrock:us.anthropic.claude-haiku-4-5-20251001-v1:0, stream: true}]`,
		record: func(string) map[string]string {
			return map[string]string{"AWS_ACCESS_KEY_ID": cloudKey, "AWS_SECRET_ACCESS_KEY": cloudSecret, "AWS_SESSION_TOKEN": cloudSession, "AWS_REGION": "us-west-2"}
		},
		api: cassette.APIBedrockInvoke, streamType: cassette.EventStreamContentType,
	},
	{
		name:      "vertex",
		providers: func(base string) string { return `{vertex: {kind: vertex, base_url: "` + base + `"}}` },
		models:    `[vertex:claude-sonnet-4-5@20250929, {spec: vertex:claude-haiku-4-5@20251001, stream: true}]`,
		record: func(string) map[string]string {
			return map[string]string{"GOOGLE_OAUTH_ACCESS_TOKEN": cloudKey, "ANTHROPIC_VERTEX_PROJECT_ID": "canary-project", "CLOUD_ML_REGION": "us-east5"}
		},
		api: cassette.APIVertexAnthropic, streamType: "text/event-stream",
	},
	{
		name: "azure-chat", tls: true,
		providers: func(string) string { return `{}` },
		models:    `[azure_openai:gpt-4.1, {spec: azure_openai:gpt-4o, stream: true}]`,
		record: func(base string) map[string]string {
			return map[string]string{"AZURE_OPENAI_ENDPOINT": base, "AZURE_OPENAI_API_KEY": cloudKey}
		},
		api: cassette.APIOpenAIChat, streamType: "text/event-stream",
	},
	{
		name: "azure-responses", tls: true,
		providers: func(string) string {
			return `{azure-resp: {kind: azure-openai, base_url: "${AZURE_OPENAI_ENDPOINT}", api_key_env: AZURE_OPENAI_API_KEY, key_optional: true, use_responses_api: true, api_version: 2025-04-01-preview}}`
		},
		models: `[azure-resp:gpt-4.1, {spec: azure-resp:gpt-4o, stream: true}]`,
		record: func(base string) map[string]string {
			return map[string]string{"AZURE_OPENAI_ENDPOINT": base, "AZURE_OPENAI_API_KEY": cloudKey}
		},
		api: cassette.APIOpenAIResponses, streamType: "text/event-stream",
	},
}

// trustServer makes the CLI's connections trust srv's certificate until
// the test ends, as SSL_CERT_FILE would for the real binary: the Azure
// SDK sends credentials over TLS only.
func trustServer(t *testing.T, cert *x509.Certificate) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tr := netguard.Transport()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	old := http.DefaultTransport
	http.DefaultTransport = tr
	t.Cleanup(func() { http.DefaultTransport = old })
}

// TestCloudRoutesRecordAndReplay is issue 17's "done" for each route: a
// streamed and a plain tool loop recorded through `dageval run` with canary
// credentials against the local server, replayed offline with no
// credentials, region, project or endpoint configured; no canary in any
// artifact; `cassette show` decodes every recording.
func TestCloudRoutesRecordAndReplay(t *testing.T) {
	for _, route := range cloudRoutes {
		t.Run(route.name, func(t *testing.T) {
			var srv *llmserver.Server
			if route.tls {
				srv = llmserver.NewTLSServer(graderAndAgent(), llmserver.WithAPIKey(cloudKey))
				trustServer(t, srv.Certificate())
			} else {
				srv = llmserver.NewServer(graderAndAgent(), llmserver.WithAPIKey(cloudKey))
			}
			defer srv.Close()
			dir := writeFiles(t, map[string]string{"suite.yaml": "version: 1\nname: cloud\nproviders: " + route.providers(srv.URL) +
				"\nmodels: " + route.models + "\n" + liveAgent +
				"cases: [{id: weather, input: What is the weather in Paris?, checks: [{tool_called: {name: get_weather, args: {city: Paris}}}, {final_answer: {contains: sunny}}]}]\n"})
			suite := filepath.Join(dir, "suite.yaml")

			recOut := t.TempDir()
			code, stdout, stderr := runCLIEnv(t, mapEnv(route.record(srv.URL)), "run", suite, "--mode", "record", "--out", recOut)
			require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stdout, "PASSED: 2 of 2 cells passed")
			served := srv.Requests()
			require.Len(t, served, 4, "two tool loops of two calls")
			streams := 0
			for _, s := range served {
				assert.Equal(t, route.api, s.API)
				assert.Equal(t, 200, s.Status, s.Error)
				if s.Stream {
					streams++
				}
			}
			assert.Equal(t, 2, streams, "one cell streams both of its calls")

			cassettes, err := filepath.Glob(filepath.Join(dir, "cassettes", "*.yaml"))
			require.NoError(t, err)
			require.Len(t, cassettes, 2)
			streamedTypes := 0
			for _, p := range cassettes {
				c, err := cassette.Read(p)
				require.NoError(t, err)
				require.Len(t, c.Interactions, 2, p)
				for _, it := range c.Interactions {
					if strings.HasPrefix(it.Response.Headers.Get("Content-Type"), route.streamType) && route.streamType != "text/event-stream" {
						streamedTypes++
					}
				}
				code, stdout, stderr := runCLI(t, "cassette", "show", p)
				require.Equal(t, 0, code, "cassette show %s:\n%s\n%s", p, stdout, stderr)
				assert.Equal(t, 2, strings.Count(stdout, "outcome      answer"), stdout)
				assert.Contains(t, stdout, "get_weather {\"city\":\"Paris\"}")
				assert.Contains(t, stdout, "api          "+route.api)
				code, stdout, stderr = runCLI(t, "cassette", "diff", p, p)
				require.Equal(t, 0, code, "cassette diff reads the recording as the model saw it:\n%s\n%s", stdout, stderr)
			}
			if route.streamType == cassette.EventStreamContentType {
				assert.Equal(t, 2, streamedTypes, "the streamed cell's answers are Bedrock's binary event stream")
			}

			repOut := t.TempDir()
			code, stdout, stderr = runCLIEnv(t, mapEnv(map[string]string{"CI": "true"}), "run", suite, "--out", repOut)
			require.Equal(t, 0, code, "replay with nothing configured:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			assert.Contains(t, stdout, "(replay mode)")
			assert.Contains(t, stdout, "PASSED: 2 of 2 cells passed")
			assert.Len(t, srv.Requests(), 4, "the replay reaches no server")

			for _, d := range []string{recOut, repOut, filepath.Join(dir, "cassettes")} {
				assertNoCanary(t, d)
			}
			for _, out := range []string{stdout, stderr} {
				for _, c := range []string{cloudKey, cloudSecret, cloudSession} {
					assert.NotContains(t, out, c)
				}
			}
		})
	}
}

// assertNoCanary greps every file under dir for the canary credentials and
// for the signature headers recording drops.
func assertNoCanary(t *testing.T, dir string) {
	t.Helper()
	files := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		for _, c := range []string{cloudKey, cloudSecret, cloudSession, "X-Amz-Date", "X-Amz-Content-Sha256"} {
			assert.NotContains(t, string(data), c, "%s", p)
		}
		return nil
	}))
	assert.Positive(t, files, dir)
}
