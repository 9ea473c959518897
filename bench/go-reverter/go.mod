module spec-guard.local/go-reverter

go 1.24
