// What the three versions of the bench/typed program share: sizes, the
// mailbox contents, and the work of a send and a sort. Each version includes
// it, so it costs all three the same compile time.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace email_bench {

constexpr int users = 4;
constexpr int emails_per_user = 16;
constexpr int requests = 2000;

// users x emails_per_user emails (an email type with a `text` member).
template <class Email>
void fill_mailboxes(std::vector<std::vector<Email>>& boxes) {
  boxes.resize(users);
  for (int u = 0; u < users; ++u) {
    boxes[u] = std::vector<Email>(emails_per_user);
    for (int id = 0; id < emails_per_user; ++id) boxes[u][id].text = "mail " + std::to_string(u * 100 + id);
  }
}

inline long checksum(const std::string& s) {
  long h = 0;
  for (char ch : s) h = h * 31 + static_cast<unsigned char>(ch);
  return h & 0xffff;
}

inline long send_work(int user, int id) { return checksum("to " + std::to_string(user) + ":" + std::to_string(id)); }

// Sorts the user's keys; returns the smallest plus the largest.
inline long sort_work(int user) {
  std::vector<long> keys;
  for (int id = 0; id < emails_per_user; ++id) keys.push_back((id * 7919L + user) % 101);
  std::sort(keys.begin(), keys.end());
  return keys.front() + keys.back();
}

// Print (compress == false) or compress an email's text in place; returns
// the printed text's checksum, 0 for a compression.
inline long mail_work(std::string& text, bool& compressed, bool compress) {
  if (compress != compressed) {
    std::reverse(text.begin(), text.end());  // "Huffman"
    compressed = compress;
  }
  return compress ? 0 : checksum(text);
}

}  // namespace email_bench
