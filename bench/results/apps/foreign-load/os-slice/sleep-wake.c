// Wake-up delay of a thread that sleeps 200 us, then runs ~20k loop iterations, 2000 times:
// p50/p90/p99/max of the oversleep, with the kernel's slice or the one given in us (argv[1]).
// Build: gcc -O2 sleep-wake.c -o /tmp/sleep-wake. Run: see README.md ("A first check").
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/sched.h>
#include <linux/sched/types.h>
static uint64_t now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000ull+t.tv_nsec;}
int cmp(const void*a,const void*b){uint64_t x=*(uint64_t*)a,y=*(uint64_t*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  long slice=argc>1?atol(argv[1]):0;
  if(slice){struct sched_attr a={0};a.size=sizeof a;a.sched_policy=SCHED_NORMAL;a.sched_runtime=slice;
    if(syscall(SYS_sched_setattr,0,&a,0)){perror("sched_setattr");return 1;}}
  struct sched_attr g={0}; syscall(SYS_sched_getattr,0,&g,sizeof g,0); fprintf(stderr,"runtime=%llu\n",(unsigned long long)g.sched_runtime);
  enum{N=2000}; static uint64_t lat[N];
  for(int i=0;i<N;i++){uint64_t t0=now();struct timespec s={0,200000};nanosleep(&s,0);lat[i]=now()-t0-200000;
    volatile int x=0; for(int j=0;j<20000;j++) x+=j;}
  qsort(lat,N,8,cmp);
  printf("slice=%ld p50=%lu p90=%lu p99=%lu max=%lu us\n",slice,lat[N/2]/1000,lat[N*9/10]/1000,lat[N*99/100]/1000,lat[N-1]/1000);
}
