package web

import (
	"strings"

	"github.com/certorder/certorder/internal/deploytarget"
)

// DeployedHost is the host the order page's check command names
// (certorder deployed HOST): the certificate's common name, else its first
// DNS name, that is a host name by the command's own rule (deploytarget:
// nothing a shell would read as more than a word). For a wildcard
// certificate (*.example.com) it is www in place of the star
// (www.example.com), and wildcard is true: the page asks the member to put
// a host that serves it there. "" when no name will do.
func DeployedHost(commonName string, dnsNames []string) (host string, wildcard bool) {
	names := append([]string{commonName}, dnsNames...)
	for _, n := range names {
		if deploytarget.HostName(n) {
			return strings.ToLower(n), false
		}
	}
	for _, n := range names {
		if rest, ok := strings.CutPrefix(n, "*."); ok && deploytarget.HostName(rest) {
			return "www." + strings.ToLower(rest), true
		}
	}
	return "", false
}
