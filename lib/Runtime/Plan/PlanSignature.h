//===- PlanSignature.h - Ed25519 signatures of plans ----------------------===//
//
// A plan is native code (docs/security.md): running one from someone else
// means running their program. A signature says who wrote it. `of-sign`
// signs a plan with an Ed25519 key (libsodium) into a detached file beside
// it, PLAN.ofp.sig, one line:
//
//   of-plan-signature ed25519 <public key, 64 hex digits> <signature, 128>
//
// over every byte of the plan file. A trusted-keys file lists public keys,
// one per line (blank lines and '#' comments allowed):
//
//   of-plan-key ed25519 <public key, 64 hex digits> [a comment: who]
//
// When a plan is opened under a policy (ofrt_plan_open_file_trusted, of-run
// --trusted-keys, or $OF_TRUSTED_KEYS), the bytes read once are checked
// against the signature beside the path before anything else is done with
// them; an unsigned plan, a key not in the file, or a signature that does
// not match refuse the plan. libofrt loads libsodium (libsodium.so.23, or
// $OF_SODIUM_LIBRARY) with dlopen only then, so it links nothing new.
//
//===----------------------------------------------------------------------===//

#ifndef OF_LIB_RUNTIME_PLANSIGNATURE_H
#define OF_LIB_RUNTIME_PLANSIGNATURE_H

#include "Session/Status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace of::rt {

inline constexpr const char *kSignatureSuffix = ".sig";
inline constexpr const char *kSignatureTag = "of-plan-signature";
inline constexpr const char *kPublicKeyTag = "of-plan-key";
inline constexpr const char *kSecretKeyTag = "of-plan-secret-key";
inline constexpr const char *kAlgorithm = "ed25519";

using PublicKey = std::array<uint8_t, 32>;
using Signature = std::array<uint8_t, 64>;

/// `bytes` as lowercase hexadecimal digits.
std::string toHex(const uint8_t *bytes, size_t size);
/// Parses exactly `size` bytes of hexadecimal digits; false otherwise.
bool fromHex(const std::string &text, uint8_t *bytes, size_t size);

/// Reads a regular file of at most `limit` bytes.
Status readSmallFile(const std::string &path, const char *what, uint64_t limit,
                     std::string &out);

/// The keys of a trusted-keys file, with each line's comment.
struct TrustedKey {
  PublicKey key;
  std::string comment;
};
Status readTrustedKeys(const std::string &path, std::vector<TrustedKey> &out);

/// Checks that `path` + ".sig" holds a signature of the `size` bytes at
/// `data` by one of the keys of the file `trustedKeys`.
Status verifyPlanSignature(const uint8_t *data, uint64_t size,
                           const std::string &path,
                           const std::string &trustedKeys);

} // namespace of::rt

#endif // OF_LIB_RUNTIME_PLANSIGNATURE_H
