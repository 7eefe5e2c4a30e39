module visitors

go 1.26.8

require (
	github.com/rs/zerolog v1.35.1
	github.com/sirupsen/logrus v1.10.2
)

require (
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	golang.org/x/sys v0.29.0 // indirect
)
