package dirsvc

import (
	"path/filepath"
	"strings"
)

// The data folder's layout, which every package that touches its files takes from here: the
// platform file at its root, and each directory's files in a folder of its own under DirsFolder
// (the files' schemas are the schema package's, by the same names).
// A file is named by its path in the folder without the .db suffix, with slashes: "platform",
// "dirs/<slug>/directory", "dirs/<slug>/ops", "dirs/<slug>/webhooks"; replication names its copies
// the same way.

// DirsFolder is the folder, in the data folder, of the directories' folders.
const DirsFolder = "dirs"

// The store files: the platform's, and each directory's published file and, on the primary only,
// its operations file (canonical records) and its webhooks file (endpoints and deliveries: written
// by background work beside imports, never behind them, so in a file of its own).
const (
	PlatformFile  = "platform"
	DirectoryFile = "directory"
	OpsFile       = "ops"
	WebhooksFile  = "webhooks"
)

// DirectoryFiles are a directory's files, in the order a restore takes them. The published file
// always exists; the others appear with their first write.
var DirectoryFiles = []string{DirectoryFile, OpsFile, WebhooksFile}

// FileName returns the name of the store file f: the directory slug's for a directory's files
// (slug is not used for the platform file).
func FileName(f, slug string) string {
	if f == PlatformFile {
		return PlatformFile
	}
	return DirsFolder + "/" + slug + "/" + f
}

// ParseFileName returns the store file and the directory slug that name names; ok is false when it
// names no file of the layout.
func ParseFileName(name string) (f, slug string, ok bool) {
	if name == PlatformFile {
		return PlatformFile, "", true
	}
	parts := strings.Split(name, "/")
	if len(parts) != 3 || parts[0] != DirsFolder || parts[1] == "" || strings.ContainsAny(parts[1], `.\`) {
		return "", "", false
	}
	switch f := parts[2]; f {
	case DirectoryFile, OpsFile, WebhooksFile:
		return f, parts[1], true
	}
	return "", "", false
}

// FilePath returns the path of the file named name in the data folder data.
func FilePath(data, name string) string { return filepath.Join(data, filepath.FromSlash(name)+".db") }

// DirectoryFolder returns the folder of the directory slug's files in the data folder data.
func DirectoryFolder(data, slug string) string { return filepath.Join(data, DirsFolder, slug) }

// DirsPath returns the folder of the directories' folders in the data folder data.
func DirsPath(data string) string { return filepath.Join(data, DirsFolder) }

// ExportsFolder is the folder, in the data folder of the primary, of the exports: a folder per
// export, named by its ID, holding its status (export.json) and its files. Nothing in it is
// replicated to edges.
const ExportsFolder = "exports"

// ExportsPath returns the exports folder in the data folder data.
func ExportsPath(data string) string { return filepath.Join(data, ExportsFolder) }
