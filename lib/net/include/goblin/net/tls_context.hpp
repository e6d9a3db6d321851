// TLS contexts of the transport (OpenSSL through Asio): the node's, from a certificate chain and a
// private key in PEM files, and a client's, which verifies the peer against a CA file or the
// system trust store. Built once at startup; connections then share them read-only (any thread).
#pragma once

#include <memory>
#include <string>

#include "goblin/core/error.hpp"

namespace boost::asio::ssl {
class context;
} // namespace boost::asio::ssl

namespace goblin::net {

using TlsContext = std::shared_ptr<boost::asio::ssl::context>;

// TLS 1.2 or later, no compression. Refuses a missing or unreadable file, a PEM that holds no
// certificate or key, and a key that does not match the certificate, naming the file.
Expected<TlsContext> makeServerTlsContext(const std::string& certFile, const std::string& keyFile);

// TLS 1.2 or later; the server's certificate must chain to `caFile` (PEM, one or more CA
// certificates), or to the system trust store when `caFile` is empty. The host name is checked
// per connection (connectWebSocket).
Expected<TlsContext> makeClientTlsContext(const std::string& caFile);

} // namespace goblin::net
