#include "goblin/net/tls_context.hpp"

#include <fstream>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace goblin::net {

namespace ssl = boost::asio::ssl;

namespace {

// An unreadable path gets its own sentence: OpenSSL's message for it ("no such file") names
// neither the file nor what it was for.
Expected<void> checkReadable(const std::string& path, const char* what) {
    std::string message(what);
    if (path.empty())
        return makeError(ErrorCode::InvalidInput, message.append(" file: no path given"));
    if (std::ifstream(path).good())
        return {};
    message.append(" file ").append(path).append(" cannot be read");
    return makeError(ErrorCode::InvalidInput, message);
}

Expected<void> failure(const char* what, const std::string& path,
                       const boost::system::error_code& ec) {
    std::string message(what);
    message.append(" ").append(path).append(": ").append(ec.message());
    return makeError(ErrorCode::InvalidInput, message);
}

Expected<TlsContext> makeContext(ssl::context::method method) {
    auto context = std::make_shared<ssl::context>(method);
    context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                         ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                         ssl::context::no_tlsv1_1 | ssl::context::no_compression);
    if (SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION) != 1)
        return makeError(ErrorCode::Internal, "OpenSSL refused TLS 1.2 as the minimum version");
    return context;
}

} // namespace

Expected<TlsContext> makeServerTlsContext(const std::string& certFile, const std::string& keyFile) {
    if (auto readable = checkReadable(certFile, "TLS certificate"); !readable)
        return tl::unexpected(readable.error());
    if (auto readable = checkReadable(keyFile, "TLS key"); !readable)
        return tl::unexpected(readable.error());
    auto context = makeContext(ssl::context::tls_server);
    if (!context)
        return context;
    boost::system::error_code ec;
    (*context)->use_certificate_chain_file(certFile, ec);
    if (ec)
        return tl::unexpected(failure("no PEM certificate in", certFile, ec).error());
    (*context)->use_private_key_file(keyFile, ssl::context::pem, ec);
    const bool mismatch =
        ec && ec.category() == boost::asio::error::get_ssl_category() &&
        ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH;
    if (mismatch || (!ec && SSL_CTX_check_private_key((*context)->native_handle()) != 1)) {
        std::string message = "the TLS key ";
        message.append(keyFile).append(" does not match the certificate ").append(certFile);
        return makeError(ErrorCode::InvalidInput, message);
    }
    if (ec)
        return tl::unexpected(failure("no PEM private key in", keyFile, ec).error());
    // The node resumes no sessions, so it sends no session tickets. A TLS 1.3 ticket arrives after
    // the handshake, when a client reading in one thread and writing in another (websockets' sync
    // client, under the goblin package) reads it while it writes its upgrade request: CPython's SSL
    // sockets are not safe for that, and the request can be lost (the node then waits out its
    // handshake timeout). Without tickets, a client's first read is the node's answer.
    SSL_CTX_set_num_tickets((*context)->native_handle(), 0);
    SSL_CTX_set_options((*context)->native_handle(), SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode((*context)->native_handle(), SSL_SESS_CACHE_OFF);
    return context;
}

Expected<TlsContext> makeClientTlsContext(const std::string& caFile) {
    auto context = makeContext(ssl::context::tls_client);
    if (!context)
        return context;
    (*context)->set_verify_mode(ssl::verify_peer);
    boost::system::error_code ec;
    if (caFile.empty()) {
        (*context)->set_default_verify_paths(ec);
        if (ec)
            return tl::unexpected(
                failure("cannot load the system's", "CA certificates", ec).error());
        return context;
    }
    if (auto readable = checkReadable(caFile, "CA"); !readable)
        return tl::unexpected(readable.error());
    (*context)->load_verify_file(caFile, ec);
    if (ec)
        return tl::unexpected(failure("no PEM CA certificate in", caFile, ec).error());
    return context;
}

} // namespace goblin::net
