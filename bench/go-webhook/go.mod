module spec-guard.local/go-webhook

go 1.24
