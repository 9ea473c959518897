// The peer in bench/admission and bench/apiserver-overhead: the smallest webhook that does
// spec-guard's core check the obvious Go way. It decodes the AdmissionReview with
// encoding/json into maps and denies an untrusted UPDATE whose spec differs from the old
// one (reflect.DeepEqual). No stamps, normalizers, canonical values or metrics.
// Usage: go-webhook CERT KEY ADDR TRUSTED_USER
package main

import (
	"encoding/json"
	"log"
	"net/http"
	"os"
	"reflect"
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

func main() {
	if len(os.Args) != 5 {
		log.Fatal("usage: go-webhook CERT KEY ADDR TRUSTED_USER")
	}
	trusted := os.Args[4]
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
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", handler)
	mux.HandleFunc("/mutate", handler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	log.Fatal(http.ListenAndServeTLS(os.Args[3], os.Args[1], os.Args[2], mux))
}
