// A throw-away PKI for TLS tests, made with OpenSSL in memory: a CA and leaf certificates it signs
// (EC P-256, SHA-256, valid from an hour ago for a day), written as PEM files into a folder the
// test owns. Test code only; any thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace goblin::test {

struct PkiKey {
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key{nullptr, &EVP_PKEY_free};
    std::unique_ptr<X509, decltype(&X509_free)> certificate{nullptr, &X509_free};
};

inline void pkiCheck(bool ok, const char* what) {
    if (!ok)
        throw std::runtime_error(std::string("test PKI: ") + what + " failed");
}

inline void addExtension(X509* certificate, X509* issuer, int nid, const char* value) {
    X509V3_CTX context;
    X509V3_set_ctx(&context, issuer, certificate, nullptr, nullptr, 0);
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
    pkiCheck(extension != nullptr, "X509V3_EXT_conf_nid");
    pkiCheck(X509_add_ext(certificate, extension, -1) == 1, "X509_add_ext");
    X509_EXTENSION_free(extension);
}

// A CA when `issuer` is null (self-signed), else a server certificate for `altNames`
// ("DNS:localhost,IP:127.0.0.1") signed by `issuer`.
inline PkiKey makeCertificate(const std::string& commonName, const PkiKey* issuer,
                              const std::string& altNames = {}) {
    static std::int64_t serial = 1;
    PkiKey made;
    made.key.reset(EVP_EC_gen("P-256"));
    pkiCheck(made.key != nullptr, "EVP_EC_gen");
    made.certificate.reset(X509_new());
    X509* certificate = made.certificate.get();
    pkiCheck(X509_set_version(certificate, 2) == 1, "X509_set_version");
    ASN1_INTEGER_set_int64(X509_get_serialNumber(certificate), serial++);
    X509_gmtime_adj(X509_getm_notBefore(certificate), -3600);
    X509_gmtime_adj(X509_getm_notAfter(certificate), 24 * 3600);
    pkiCheck(X509_set_pubkey(certificate, made.key.get()) == 1, "X509_set_pubkey");
    X509_NAME* name = X509_get_subject_name(certificate);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(commonName.c_str()), -1, -1,
                               0);
    X509* signer = issuer ? issuer->certificate.get() : certificate;
    pkiCheck(X509_set_issuer_name(certificate, X509_get_subject_name(signer)) == 1,
             "X509_set_issuer_name");
    if (!issuer) {
        addExtension(certificate, signer, NID_basic_constraints, "critical,CA:TRUE");
        addExtension(certificate, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
        addExtension(certificate, signer, NID_subject_key_identifier, "hash");
    } else {
        addExtension(certificate, signer, NID_basic_constraints, "critical,CA:FALSE");
        addExtension(certificate, signer, NID_ext_key_usage, "serverAuth");
        addExtension(certificate, signer, NID_subject_alt_name, altNames.c_str());
    }
    EVP_PKEY* signingKey = issuer ? issuer->key.get() : made.key.get();
    pkiCheck(X509_sign(certificate, signingKey, EVP_sha256()) > 0, "X509_sign");
    return made;
}

inline void writeText(const std::filesystem::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    pkiCheck(out.good(), "writing a PEM file");
}

inline std::string pemOf(const PkiKey& made, bool privateKey) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
    const int ok = privateKey ? PEM_write_bio_PrivateKey(bio.get(), made.key.get(), nullptr,
                                                         nullptr, 0, nullptr, nullptr)
                              : PEM_write_bio_X509(bio.get(), made.certificate.get());
    pkiCheck(ok == 1, "PEM_write_bio");
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(size));
}

// Writes <stem>.crt and <stem>.key into `folder`.
inline void writePem(const PkiKey& made, const std::filesystem::path& folder,
                     const std::string& stem) {
    writeText(folder / (stem + ".crt"), pemOf(made, false));
    writeText(folder / (stem + ".key"), pemOf(made, true));
}

} // namespace goblin::test
