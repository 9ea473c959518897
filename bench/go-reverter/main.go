// The Go peer of bench/bare-reverter.ts in bench/revert: the smallest watcher that reverts,
// written the obvious Go way. It lists the Applications of one namespace once (their
// targetRevision is the value it keeps), watches them, decodes every watch event with
// encoding/json into a struct of the fields it reads, and answers each drift of spec.source.targetRevision with one
// JSON patch (a resourceVersion precondition and one replace) and one Event, over net/http
// (HTTP/2, as client-go speaks to the apiserver). No attribution, stamps, store or logs.
// With "follow" it reverts nothing and keeps each change it sees instead: the watch a guard
// keeps beside its webhook, as bench/apiserver-overhead measures what that costs the apiserver.
// Usage: go-reverter SERVER CA CERT KEY NAMESPACE [follow] (prints "watching" once it watches)
package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

var (
	client *http.Client
	server string
	events atomic.Int64
)

func call(method, path, contentType string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, server+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	accept := "application/json"
	if method != http.MethodGet {
		// Writes ask for their answer as metadata only, as spec-guard's do: nobody reads it.
		accept = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"
	}
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := client.Do(req)
	if err == nil && res.StatusCode >= 300 {
		text, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return nil, fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, text)
	}
	return res, err
}

func discard(res *http.Response, err error) error {
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	return res.Body.Close()
}

// app: what the reverter reads of an Application; the rest of each event is skipped by the decoder.
type app struct {
	Metadata struct {
		Name            string `json:"name"`
		UID             string `json:"uid"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Spec struct {
		Source struct {
			TargetRevision string `json:"targetRevision"`
		} `json:"source"`
	} `json:"spec"`
}

func revert(apps, namespace string, a app, value string) {
	name := a.Metadata.Name
	patch, _ := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": a.Metadata.ResourceVersion},
		{"op": "replace", "path": "/spec/source/targetRevision", "value": value},
	})
	now := time.Now().UTC().Format(time.RFC3339)
	event, _ := json.Marshal(map[string]any{
		"apiVersion":     "v1",
		"kind":           "Event",
		"metadata":       map[string]any{"name": fmt.Sprintf("%s.go-%d-%d", name, os.Getpid(), events.Add(1)), "namespace": namespace},
		"involvedObject": map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "name": name, "namespace": namespace, "uid": a.Metadata.UID},
		"type":           "Warning",
		"reason":         "SpecDriftReverted",
		"message":        "spec.source.targetRevision was changed without the source of truth; reverted to " + value,
		"count":          1,
		"firstTimestamp": now,
		"lastTimestamp":  now,
		"source":         map[string]any{"component": "go-reverter"},
	})
	if err := discard(call("PATCH", apps+"/"+name, "application/json-patch+json", patch)); err != nil {
		log.Print(err)
		return
	}
	if err := discard(call("POST", "/api/v1/namespaces/"+namespace+"/events", "application/json", event)); err != nil {
		log.Print(err)
	}
}

func main() {
	if len(os.Args) != 6 && (len(os.Args) != 7 || os.Args[6] != "follow") {
		log.Fatal("usage: go-reverter SERVER CA CERT KEY NAMESPACE [follow]")
	}
	follow := len(os.Args) == 7
	server = os.Args[1]
	namespace := os.Args[5]
	ca, err := os.ReadFile(os.Args[2])
	if err != nil {
		log.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(os.Args[3], os.Args[4])
	if err != nil {
		log.Fatal(err)
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 64}
	client = &http.Client{Transport: transport}
	apps := "/apis/argoproj.io/v1alpha1/namespaces/" + namespace + "/applications"

	res, err := call("GET", apps, "", nil)
	if err != nil {
		log.Fatal(err)
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []app `json:"items"`
	}
	if err := json.NewDecoder(res.Body).Decode(&list); err != nil {
		log.Fatal(err)
	}
	res.Body.Close()
	kept := map[string]string{}
	for _, a := range list.Items {
		kept[a.Metadata.Name] = a.Spec.Source.TargetRevision
	}
	// The apiserver ends a watch that falls behind in a burst: watch again from the last revision seen.
	from := list.Metadata.ResourceVersion
	for first := true; ; first = false {
		watch, err := call("GET", apps+"?watch=1&allowWatchBookmarks=false&resourceVersion="+from, "", nil)
		if err != nil {
			log.Fatal(err)
		}
		if first {
			fmt.Println("watching")
		}
		lines := bufio.NewReaderSize(watch.Body, 1<<20)
		for {
			line, err := lines.ReadBytes('\n')
			if err == io.EOF {
				break
			} else if err != nil {
				log.Fatal(err)
			}
			var event struct {
				Type   string `json:"type"`
				Object app    `json:"object"`
			}
			if err := json.Unmarshal(line, &event); err != nil {
				log.Fatal(err)
			}
			a := event.Object
			from = a.Metadata.ResourceVersion
			value, known := kept[a.Metadata.Name]
			if follow {
				kept[a.Metadata.Name] = a.Spec.Source.TargetRevision
			} else if event.Type == "MODIFIED" && known && a.Spec.Source.TargetRevision != value {
				go revert(apps, namespace, a, value)
			}
		}
		watch.Body.Close()
	}
}
