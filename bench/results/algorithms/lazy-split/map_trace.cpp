#include <promptly/promptly.hpp>
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cstdlib>
static inline std::uint64_t mix(std::uint64_t z){ z=(z^(z>>30))*0xbf58476d1ce4e5b9ULL; z=(z^(z>>27))*0x94d049bb133111ebULL; return z^(z>>31);}
int main(int argc,char**argv){
  promptly::runtime_config cfg; cfg.workers=2; cfg.pin_workers = getenv("PIN")!=nullptr; if(argc>1) cfg.policy=argv[1];
  std::size_t n = argc>2? atol(argv[2]) : 10000000;
  promptly::runtime rt{cfg};
  std::vector<std::uint64_t> out(n);
  std::vector<double> t;
  for(int r=0;r<30;r++){
    auto t0=std::chrono::steady_clock::now();
    rt.run([&]{ promptly::parallel_for(promptly::index_range{std::size_t{0},n},[&](auto rg){ for(std::size_t i:rg){std::uint64_t z=i; for(int k=0;k<4;k++) z=mix(z); out[i]=z;} }); });
    auto t1=std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(t1-t0).count());
    std::uint64_t s=0; for(auto x:out) s+=x; if(s==42) puts("x");
  }
  std::sort(t.begin(),t.end()); printf("%s median %.3f ms min %.3f\n", cfg.policy.c_str(), t[t.size()/2]*1e3, t[0]*1e3);
}
