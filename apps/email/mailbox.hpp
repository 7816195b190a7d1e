// Mailboxes and their messages.
//
// Invariants:
// * A mailbox's list of messages is guarded by its mutex, held for a few instructions and never
//   across a wait (tasks may resume on another worker after a wait, docs "Locks across waits").
// * A message's header (id, from, date, size) never changes after delivery. Its body (text or
//   Huffman code) is read and written only by print and compress operations, which run one at a
//   time per message: each swaps its own future into `last_op` with a compare-and-swap and
//   touches the future it displaced before touching the body (the futures-and-state paper,
//   Sec. 5.1). So completion of the previous operation orders every body access.
// * `compressed` mirrors the body's state for the periodic checker, which reads it without
//   joining the chain: it is a hint, re-checked by compress inside the chain.
// * A mailbox keeps at most `capacity` messages of at most `max_bytes` of plain text together;
//   delivering past either drops the oldest messages (never the one delivered, which its sender
//   checked against max_bytes). Operations hold messages by shared_ptr, so a dropped message
//   stays valid for them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "priorities.hpp"

namespace email {

struct message {
  message(std::uint64_t id, std::string from, std::string text);

  const std::uint64_t id;    // unique in the server, increasing with delivery: also the date
  const std::string from;
  const std::size_t size;    // plain text length

  // The body: plain text, or its Huffman code when `compressed`. See the invariants above.
  std::string body;
  std::atomic<bool> compressed{false};
  promptly::typed::future_cell<int, archiving> last_op;
};

class mailbox {
 public:
  mailbox(std::string owner, std::size_t capacity, std::size_t max_bytes);

  const std::string& owner() const noexcept { return owner_; }
  void deliver(std::shared_ptr<message> m);
  std::vector<std::shared_ptr<message>> snapshot() const;
  // The index-th message, oldest first; empty if there is no such message.
  std::shared_ptr<message> at(std::size_t index) const;
  std::size_t size() const;
  // Messages whose body is (by the hint) not compressed, oldest first.
  std::vector<std::shared_ptr<message>> uncompressed() const;

 private:
  const std::string owner_;
  const std::size_t capacity_;
  const std::size_t max_bytes_;
  mutable std::mutex mutex_;
  std::deque<std::shared_ptr<message>> messages_;
  std::size_t bytes_ = 0;  // sum of messages_' sizes
};

// Every mailbox of the server, by owner. Mailboxes are created on first login and live as long
// as the store; there are at most max_boxes of them (invariant, checked under mutex_).
class mail_store {
 public:
  mail_store(std::size_t capacity, std::size_t max_bytes, std::size_t max_boxes)
      : capacity_(capacity), max_bytes_(max_bytes), max_boxes_(max_boxes) {}

  // The owner's mailbox, and whether this call created it; a null mailbox when the owner has
  // none and the store holds max_boxes already. A new mailbox is filled by `fill` before anyone
  // else can see it (two first logins of one user at once must both find the seed messages).
  std::pair<std::shared_ptr<mailbox>, bool> open(const std::string& owner, const std::function<void(mailbox&)>& fill);
  std::size_t max_boxes() const noexcept { return max_boxes_; }
  std::shared_ptr<mailbox> find(const std::string& owner) const;
  std::uint64_t next_id() noexcept { return next_id_.fetch_add(1, std::memory_order_relaxed); }  // unique only

 private:
  const std::size_t capacity_;
  const std::size_t max_bytes_;
  const std::size_t max_boxes_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<mailbox>, std::less<>> boxes_;
  std::atomic<std::uint64_t> next_id_{1};
};

}  // namespace email
