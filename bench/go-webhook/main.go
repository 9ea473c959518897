// The peer in bench/admission and bench/apiserver-overhead: the smallest webhook that does
// spec-guard's core check the obvious Go way. It decodes the AdmissionReview with
// encoding/json into maps and denies an untrusted UPDATE whose spec differs from the old
// one (reflect.DeepEqual). No stamps, normalizers, canonical values or metrics. With STAMP
// set to "stamp-patch", /mutate answers an admitted UPDATE or CREATE with a JSON patch the
// size and shape of spec-guard's stamp (one annotation, new each write): what the patch
// alone costs the apiserver, measured apart from what computes it.
// Usage: go-webhook CERT KEY ADDR TRUSTED_USER [stamp-patch]
package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"os"
	"reflect"
	"strings"
	"time"
)

type review struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Request    map[string]any `json:"request"`
}

func field(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// stampOps: spec-guard's stamp patch, as long as a real stamp (v2.<sha256>.<sequence>.<HMAC>).
func stampOps(hasAnnotations bool) []byte {
	stamp := fmt.Sprintf("v2.%s.%d.%s", strings.Repeat("a", 64), time.Now().UnixMilli(), strings.Repeat("b", 43))
	var ops []map[string]any
	if hasAnnotations {
		ops = []map[string]any{{"op": "add", "path": "/metadata/annotations/spec-guard.io~1stamp", "value": stamp}}
	} else {
		ops = []map[string]any{{"op": "add", "path": "/metadata/annotations", "value": map[string]string{"spec-guard.io/stamp": stamp}}}
	}
	out, _ := json.Marshal(ops)
	return out
}

func main() {
	if len(os.Args) != 5 && len(os.Args) != 6 {
		log.Fatal("usage: go-webhook CERT KEY ADDR TRUSTED_USER [stamp-patch]")
	}
	trusted := os.Args[4]
	stampPatch := len(os.Args) == 6 && os.Args[5] == "stamp-patch"
	handler := func(w http.ResponseWriter, r *http.Request) {
		var in review
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		allowed := true
		if field(in.Request, "userInfo", "username") != trusted && field(in.Request, "operation") == "UPDATE" {
			allowed = reflect.DeepEqual(field(in.Request, "object", "spec"), field(in.Request, "oldObject", "spec"))
		}
		response := map[string]any{"uid": in.Request["uid"], "allowed": allowed}
		if !allowed {
			response["status"] = map[string]any{"code": 403, "message": "spec is owned by the source of truth"}
		}
		op := field(in.Request, "operation")
		if stampPatch && allowed && r.URL.Path == "/mutate" && (op == "UPDATE" || op == "CREATE") {
			response["patchType"] = "JSONPatch"
			response["patch"] = base64.StdEncoding.EncodeToString(stampOps(field(in.Request, "object", "metadata", "annotations") != nil))
		}
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", handler)
	mux.HandleFunc("/mutate", handler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	log.Fatal(http.ListenAndServeTLS(os.Args[3], os.Args[1], os.Args[2], mux))
}
