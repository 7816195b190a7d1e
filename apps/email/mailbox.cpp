#include "mailbox.hpp"

#include <cassert>

namespace email {

message::message(std::uint64_t id_, std::string from_, std::string text)
    : id(id_), from(std::move(from_)), size(text.size()), body(std::move(text)) {}

mailbox::mailbox(std::string owner, std::size_t capacity, std::size_t max_bytes)
    : owner_(std::move(owner)), capacity_(capacity), max_bytes_(max_bytes) {}

void mailbox::deliver(std::shared_ptr<message> m) {
  assert(m->size <= max_bytes_ && "the sender checks a message against the mailbox quota");
  std::lock_guard lock(mutex_);
  bytes_ += m->size;
  messages_.push_back(std::move(m));
  while (messages_.size() > capacity_ || bytes_ > max_bytes_) {
    bytes_ -= messages_.front()->size;
    messages_.pop_front();
  }
  assert(!messages_.empty() && bytes_ <= max_bytes_);
}

std::vector<std::shared_ptr<message>> mailbox::snapshot() const {
  std::lock_guard lock(mutex_);
  return {messages_.begin(), messages_.end()};
}

std::shared_ptr<message> mailbox::at(std::size_t index) const {
  std::lock_guard lock(mutex_);
  return index < messages_.size() ? messages_[index] : nullptr;
}

std::size_t mailbox::size() const {
  std::lock_guard lock(mutex_);
  return messages_.size();
}

std::vector<std::shared_ptr<message>> mailbox::uncompressed() const {
  std::vector<std::shared_ptr<message>> out;
  std::lock_guard lock(mutex_);
  for (const auto& m : messages_)
    // relaxed: a hint only; compress re-checks the body's state inside the operation chain.
    if (!m->compressed.load(std::memory_order_relaxed)) out.push_back(m);
  return out;
}

std::pair<std::shared_ptr<mailbox>, bool> mail_store::open(const std::string& owner,
                                                           const std::function<void(mailbox&)>& fill) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = boxes_.find(owner); it != boxes_.end()) return {it->second, false};
    if (boxes_.size() >= max_boxes_) return {nullptr, false};  // full: no seed messages made in vain
  }
  auto box = std::make_shared<mailbox>(owner, capacity_, max_bytes_);
  fill(*box);  // outside the lock: generating the seed messages takes a while
  std::lock_guard lock(mutex_);
  if (auto it = boxes_.find(owner); it != boxes_.end()) return {it->second, false};  // a concurrent first login won
  if (boxes_.size() >= max_boxes_) return {nullptr, false};  // others filled the store meanwhile
  boxes_.emplace(owner, box);
  return {box, true};
}

std::shared_ptr<mailbox> mail_store::find(const std::string& owner) const {
  std::lock_guard lock(mutex_);
  auto it = boxes_.find(owner);
  return it == boxes_.end() ? nullptr : it->second;
}

}  // namespace email
