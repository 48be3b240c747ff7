# The static dirsvc binary (pure Go: CGO_ENABLED=0, SQLite through modernc.org/sqlite) on a minimal
# image with CA certificates (object storage over HTTPS) and no shell.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /dirsvc ./cmd/dirsvc

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /dirsvc /usr/local/bin/dirsvc
ENV DIRSVC_DATA=/data DIRSVC_ADDR=:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/dirsvc"]
CMD ["serve"]
