package vertex

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"golang.org/x/oauth2"
)

// The adapter routes the Messages API to Vertex AI itself instead of through
// anthropic-sdk-go's vertex option: that option builds a default HTTP client
// through google.golang.org/api/transport, which the adapter never uses (its
// requests always go through the configured client) and which links gRPC,
// OpenCensus and the S2A protocol, some 40 packages whose init functions
// would run at every start of dageval. What Vertex AI expects is small and
// documented: the model in the path (rawPredict, or streamRawPredict for a
// stream), not in the body, and anthropic_version in the body, not a header.

// withCredentials routes the Messages API to Vertex AI in region and project
// and authorises each request with a token from ts, through client.
func withCredentials(region, project string, ts oauth2.TokenSource, client *http.Client) option.RequestOption {
	return option.Join(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(baseURLOf(region)),
		option.WithMiddleware(rawPredict(region, project)),
		option.WithHTTPClient(authorize(client, ts)),
	)
}

// baseURLOf is Vertex AI's endpoint for region: the global and the two
// multi-region endpoints have names of their own.
func baseURLOf(region string) string {
	switch region {
	case "global":
		return "https://aiplatform.googleapis.com/"
	case "us":
		return "https://aiplatform.us.rep.googleapis.com/"
	case "eu":
		return "https://aiplatform.eu.rep.googleapis.com/"
	}
	return fmt.Sprintf("https://%s-aiplatform.googleapis.com/", region)
}

// authorize returns a shallow copy of client whose transport attaches an
// OAuth token from ts.
func authorize(client *http.Client, ts oauth2.TokenSource) *http.Client {
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	wrapped := *client
	wrapped.Transport = &oauth2.Transport{Base: base, Source: ts}
	return &wrapped
}

// Region and project names go into the URL's path and host unescaped, so
// they are held to the characters Google Cloud allows in them (a project id
// may be domain-scoped, "example.com:my-project"); anything else, a "..",
// a "/" or a ";", would change the route.
var (
	regionName  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]*$`) })
	projectName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[a-z0-9][a-z0-9.-]*:)?[a-z][a-z0-9-]*$`) })
)

// rawPredict moves a Messages call to the model's rawPredict endpoint
// (streamRawPredict for a stream). The model is escaped as one path segment,
// and the ":rawPredict" after it keeps even a model named ".." from being a
// dot segment.
func rawPredict(region, project string) option.Middleware {
	var routeErr error
	switch {
	case !regionName().MatchString(region):
		routeErr = fmt.Errorf("vertex: region %q is not a Google Cloud location name (lower-case letters, digits and '-')", region)
	case !projectName().MatchString(project):
		routeErr = fmt.Errorf("vertex: project %q is not a Google Cloud project id (lower-case letters, digits and '-', optionally after a domain and ':')", project)
	}
	models := "/v1/projects/" + project + "/locations/" + region + "/publishers/anthropic/models/"

	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if routeErr != nil {
			return nil, routeErr
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" || r.Body == nil {
			return nil, fmt.Errorf("vertex: the adapter routes only Messages calls (POST /v1/messages), not %s %s", r.Method, r.URL.Path)
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		if !gjson.ValidBytes(body) {
			return nil, fmt.Errorf("vertex: the Messages request body is not JSON")
		}
		version := r.Header.Get("anthropic-version")
		r.Header.Del("anthropic-version")
		if version != "" && !gjson.GetBytes(body, "anthropic_version").Exists() {
			if body, err = sjson.SetBytes(body, "anthropic_version", version); err != nil {
				return nil, fmt.Errorf("vertex: %w", err)
			}
		}
		model := gjson.GetBytes(body, "model").String()
		if model == "" {
			return nil, fmt.Errorf("vertex: the Messages request names no model")
		}
		if body, err = sjson.DeleteBytes(body, "model"); err != nil {
			return nil, fmt.Errorf("vertex: %w", err)
		}
		method := ":rawPredict"
		if gjson.GetBytes(body, "stream").Bool() {
			method = ":streamRawPredict"
		}
		r.URL.Path = models + model + method
		r.URL.RawPath = models + url.PathEscape(model) + method

		reader := bytes.NewReader(body)
		r.Body = io.NopCloser(reader)
		r.GetBody = func() (io.ReadCloser, error) {
			_, err := reader.Seek(0, io.SeekStart)
			return io.NopCloser(reader), err
		}
		r.ContentLength = int64(len(body))
		return next(r)
	}
}
