# The image examples/k8s-cronjob.yaml and examples/k8s-indexed-job.yaml run:
#   docker build -t registry.example.com/llmrun .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /llmrun .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /llmrun /llmrun
ENTRYPOINT ["/llmrun"]
