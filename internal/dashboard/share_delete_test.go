package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"visitors/internal/store/boltstore"
)

// TestShareLinkGoesWithItsCounter: a share link shows a counter
// while it lives; once the counter is deleted through the API, or
// dropped by an import that replaces, the link is revoked (404) and
// does not show the key made anew by someone else, as the counter's
// open-creation token goes with it.
func TestShareLinkGoesWithItsCounter(t *testing.T) {
	linkRE := regexp.MustCompile(`id="share-link" value="https?://[^/]+(/dashboard/share/[^"]+)"`)
	for _, tc := range []struct {
		name   string
		remove func(e *env, key string) (int, map[string]any)
	}{
		{"API delete", func(e *env, key string) (int, map[string]any) {
			return e.apiCall(t, "DELETE", "/api/v1/counters/?key="+url.QueryEscape(key), root, "")
		}},
		{"import replace", func(e *env, key string) (int, map[string]any) {
			return e.apiCall(t, "POST", "/api/v1/import?replace=true", root, `{"format":"visitors-export-1","hits":0,"keys":[]}`)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := boltstore.Open(boltstore.Options{Dir: t.TempDir()}) // the memory store does not import
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, st)
			const key = "shared/key~1" // a key the API makes: one a badge can show
			if code, m := e.apiCall(t, "PUT", "/api/v1/counters/?key="+url.QueryEscape(key), root, `{"total":7}`); code != 200 {
				t.Fatalf("set = %d %v", code, m)
			}
			b := e.browser(t)
			b.signIn(root)
			b.get("/dashboard/counter/" + url.PathEscape(key))
			m := linkRE.FindStringSubmatch(b.post("/dashboard/action", url.Values{"key": {url.QueryEscape(key)}, "do": {"share"}}).body)
			if m == nil {
				t.Fatal("no share link made")
			}
			anon := e.browser(t)
			if a := anon.get(m[1]); a.code != http.StatusOK || !strings.Contains(a.body, `id="total">7<`) {
				t.Fatalf("the live link = %d", a.code)
			}
			if code, m := tc.remove(e, key); code != 200 {
				t.Fatalf("remove = %d %v", code, m)
			}
			if code, m := e.apiCall(t, "PUT", "/api/v1/counters/?key="+url.QueryEscape(key), root, `{"total":99}`); code != 200 {
				t.Fatalf("make anew = %d %v", code, m)
			}
			if a := anon.get(m[1]); a.code != http.StatusNotFound {
				t.Errorf("the link after its counter was removed and made anew = %d, want 404 (body has 99: %v)", a.code, strings.Contains(a.body, ">99<"))
			}
		})
	}
}
