#pragma once

// The text part of `gpuforge plan --diff`: what apply would change inside each file, shown as
// a unified diff (the lines `diff -u` prints), with secret values masked on both sides so a
// plan can be pasted into a ticket. Pure: no files, no processes.

#include <string>
#include <string_view>

namespace gpuforge::plan {

// Above this many changed lines (deleted plus inserted) UnifiedDiff stops looking for the
// smallest edit and replaces the whole differing middle of the file in one change: the work
// stays bounded (O(lines x kMaxDiffEdits)) and the diff still turns `a` into `b`.
inline constexpr int kMaxDiffEdits = 20000;

// What GNU `diff -u --label from_label --label to_label a b` prints: "--- ", "+++ " headers,
// "@@ -l,s +l,s @@" hunks with `context` lines around each change (changes closer than
// 2 x context share a hunk) and "\ No newline at end of file" markers. The edit is minimal;
// where several are (a line repeated), it may pick another one than diff does. "" when a == b;
// "Binary files FROM and TO differ\n" when either side holds a NUL byte, so no NUL is printed.
std::string UnifiedDiff(std::string_view from_label, std::string_view to_label, std::string_view a,
                        std::string_view b, int context = 3);

// `content` with secret values replaced, line for line, before it is diffed or printed:
//  - a line whose key (the text before the first '=' or ':', or its first word; any case)
//    names a secret keeps key and separator, the value becomes "(masked)". Secret keys hold
//    password, passwd, secret, token, credential, private_key, privatekey, apikey, api_key,
//    auth_key, jwt or session_key ('-' as '_'), end in storagepass (Slurm's database password),
//    or are `key` or end in _key, -key, .key (not `- key:`, a Kubernetes label selector). Keys
//    ending in file, path or dir name where a secret is kept, not the secret, and stay; so do
//    tokenizer settings and empty values;
//  - the rest of a line after "Authorization:" or "Bearer " becomes "(masked)";
//  - a PEM private key block, BEGIN to END, becomes "(masked private key)".
// Line endings, CRLF and a missing final newline are kept. What it cannot see stays: a secret
// in a YAML block below its key, in the middle of a JSON line, between XML tags.
std::string MaskSecrets(std::string_view content);

// UnifiedDiff for the plan: lines are matched on what they hold but printed through
// MaskSecrets, so a changed password is still a changed line, "(masked)" on both sides (a diff
// of the masked texts would show nothing), and a private key block is one line.
std::string MaskedUnifiedDiff(std::string_view from_label, std::string_view to_label,
                              std::string_view a, std::string_view b, int context = 3);

// A NUL byte in the first 8000 bytes, the test diff and git use.
bool LooksBinary(std::string_view content);

}  // namespace gpuforge::plan
