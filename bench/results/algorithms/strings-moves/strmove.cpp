#include <cstdint>
#include <cstdio>
#include <vector>
#include <string>
#include <string_view>
#include <algorithm>
#include <cstring>
#include <ctime>
#include "promptly/detail/pdq_sort.hpp"
static double cpu(){timespec ts;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&ts);return ts.tv_sec*1e3+ts.tv_nsec*1e-6;}
static uint64_t mix(uint64_t z){z=(z^(z>>30))*0xbf58476d1ce4e5b9ULL;z=(z^(z>>27))*0x94d049bb133111ebULL;return z^(z>>31);}
int main(int argc,char**argv){
  size_t n=1000000; int reps=7; std::string which=argc>1?argv[1]:"string";
  std::vector<std::string> in(n);
  for(uint64_t i=0;i<n;i++){ uint64_t len=8+mix(i)%17; std::string s; for(uint64_t j=0;j<len;j++) s.push_back('a'+mix(i*64+j+1)%26); in[i]=s; }
  std::vector<double> t; std::ranges::less less;
  std::vector<std::string> v;
  for(int r=0;r<reps;r++){
    if(which=="string"){ v=in; double c0=cpu(); promptly::detail::pdq_sort(v.begin(),v.end(),less); t.push_back(cpu()-c0); }
    else if(which=="fresh"){ std::vector<std::string> w=in; double c0=cpu(); promptly::detail::pdq_sort(w.begin(),w.end(),less); t.push_back(cpu()-c0); }
    else { std::vector<std::string_view> w(in.begin(),in.end()); double c0=cpu(); promptly::detail::pdq_sort(w.begin(),w.end(),less); t.push_back(cpu()-c0); }
  }
  std::sort(t.begin(),t.end()); printf("%s cpu median %.1f ms min %.1f\n",which.c_str(),t[reps/2],t[0]);
}
