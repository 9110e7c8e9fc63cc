// Package version holds Hearth's one version string. /health, the MCP
// serverInfo, the HTTP Server header, memory_status and the add-on's
// config.yaml all report it; a test in addon/ proves config.yaml agrees.
package version

// Version is the release version of this build.
const Version = "0.1.0"
