#pragma once

// A recording fake of remote::Connector and remote::Session for tests of the layers above
// SSH: every command and upload is recorded per node; answers are scripted per node.

#include <fmt/format.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "gpuforge/remote/session.h"

namespace gpuforge::remote::testing {

struct FakeNode {
  std::optional<std::string> connect_error;  // Connect fails with this
  // Answers a command; the default succeeds with empty output.
  std::function<Result<ExecResult>(const std::string& command)> exec;
  bool dies_after_exec = false;  // the connection is gone after the first command
  std::map<std::string, std::string> files;  // what Upload wrote, what Download reads
  std::map<std::string, std::string> owners;  // what Upload was asked to own each file ("root:root")
  // Uploads to these paths fail (recorded, file left as it was), like a full disk.
  std::map<std::string, std::string> upload_errors;  // path -> error message
};

class FakeConnector final : public Connector {
 public:
  std::map<std::string, FakeNode> nodes;

  // Everything sent, in order per node: "exec: CMD", "upload: PATH (MODE)".
  std::map<std::string, std::vector<std::string>> log;
  int connects = 0;

  Result<std::unique_ptr<Session>> Connect(const Target& t) override;

 private:
  friend class FakeSession;
  std::mutex mu_;
};

class FakeSession final : public Session {
 public:
  FakeSession(FakeConnector& owner, Target t) : owner_(owner), target_(std::move(t)) {}
  const Target& target() const override { return target_; }
  bool Alive() const override { return alive_; }

  Result<ExecResult> Exec(std::string_view command, const ExecOptions& o) override {
    FakeNode* n = Node();
    Record("exec: " + std::string(command));
    if (n->dies_after_exec) alive_ = false;
    ExecResult r;
    r.exit_status = 0;
    if (n->exec) {
      Result<ExecResult> got = n->exec(std::string(command));
      if (!got.ok()) return got;
      r = *got;
    }
    // A conversing command (ExecOptions::on_line): its scripted stdout is handed over line by
    // line, and what the hook answers is recorded as "stdin: TEXT" ("stdin: EOF" on close).
    if (o.on_line) {
      bool open = true;
      for (std::size_t pos = 0, nl; (nl = r.out.find('\n', pos)) != std::string::npos; pos = nl + 1) {
        std::optional<std::string> reply = o.on_line(std::string_view(r.out).substr(pos, nl - pos));
        if (!open) continue;
        if (!reply) {
          Record("stdin: EOF");
          open = false;
        } else if (!reply->empty()) {
          Record("stdin: " + *reply);
        }
      }
    }
    return r;
  }
  Status Upload(std::string_view content, const std::string& path, const UploadOptions& o) override {
    Record(fmt::format("upload: {} ({:o})", path, o.mode));
    std::lock_guard lock(owner_.mu_);
    if (auto e = owner_.nodes[target_.node].upload_errors.find(path); e != owner_.nodes[target_.node].upload_errors.end()) {
      return Error{"node " + target_.node + ": upload " + path + ": " + e->second};
    }
    owner_.nodes[target_.node].files[path] = std::string(content);
    owner_.nodes[target_.node].owners[path] = o.owner;
    return Status::Ok();
  }
  Result<std::string> Download(const std::string& path, std::size_t) override {
    std::lock_guard lock(owner_.mu_);
    auto& files = owner_.nodes[target_.node].files;
    auto it = files.find(path);
    if (it == files.end()) return Error{"node " + target_.node + ": no such file " + path};
    return it->second;
  }

 private:
  FakeNode* Node() {
    std::lock_guard lock(owner_.mu_);
    return &owner_.nodes[target_.node];
  }
  void Record(std::string what) {
    std::lock_guard lock(owner_.mu_);
    owner_.log[target_.node].push_back(std::move(what));
  }
  FakeConnector& owner_;
  Target target_;
  bool alive_ = true;
};

inline Result<std::unique_ptr<Session>> FakeConnector::Connect(const Target& t) {
  std::lock_guard lock(mu_);
  ++connects;
  FakeNode& n = nodes[t.node];
  if (n.connect_error) return Error{*n.connect_error};
  return std::unique_ptr<Session>(std::make_unique<FakeSession>(*this, t));
}

}  // namespace gpuforge::remote::testing
