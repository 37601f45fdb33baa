/* DELTA(8) SpMV kernel shapes, hand-written in C to find what the emitter should generate.
 *
 *   gcc -O3 -march=native benchmarks/probes/delta_kernels.c -o delta_probe && ./delta_probe [density]
 *
 * An 8192 x 8192 float32 matrix, uniformly random nonzeros at `density` (default 0.5), stored as DELTA(8):
 * per row, u8 gaps (column - previous column - 1; 255 and a zero entry where a gap does not fit) and f32
 * values. Prints the minimum of 9 interleaved runs per kernel (CPU time of this thread) and its speed
 * against a dense AVX-512 GEMV; "decode only" and "stream read" are floors (no x at all). Needs AVX-512.
 * Results on the 2-core AMD EPYC (Zen 4) development VM: docs/performance.md, "DELTA(8) against dense GEMV".
 */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
#ifndef PF
#define PF 512
#endif
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static int N=8192;
static int64_t *pos; static uint8_t *gap; static float *val,*x,*y,*W;
static inline __m512i scan16(__m512i v){ /* inclusive prefix sum of 16 i32 lanes */
  __m512i z=_mm512_setzero_si512();
  v=_mm512_add_epi32(v,_mm512_alignr_epi32(v,z,15));
  v=_mm512_add_epi32(v,_mm512_alignr_epi32(v,z,14));
  v=_mm512_add_epi32(v,_mm512_alignr_epi32(v,z,12));
  v=_mm512_add_epi32(v,_mm512_alignr_epi32(v,z,8));
  return v; }
/* one running column, one accumulator: latency-bound */
static void kA(void){ for(int i=0;i<N;i++){ int64_t c=-1; float a=0; for(int64_t p=pos[i];p<pos[i+1];p++){ c+=gap[p]+1; a+=val[p]*x[c];} y[i]=a; } }

/* 4 partial sums, the column chain shared (the emitter's default shape: lanes 4) */
static void kA4(void){ for(int i=0;i<N;i++){ int64_t c=-1; float a0=0,a1=0,a2=0,a3=0; int64_t p=pos[i],e=pos[i+1];
  for(;p+4<=e;p+=4){ int64_t c0=c+gap[p]+1,c1=c0+gap[p+1]+1,c2=c1+gap[p+2]+1,c3=c2+gap[p+3]+1; a0+=val[p]*x[c0];a1+=val[p+1]*x[c1];a2+=val[p+2]*x[c2];a3+=val[p+3]*x[c3];c=c3;}
  for(;p<e;p++){c+=gap[p]+1;a0+=val[p]*x[c];} y[i]=a0+a1+a2+a3; } }
#define B 64

/* two rows interleaved: two independent column chains */
static void kF(void){ for(int i=0;i+1<N;i+=2){ int64_t c=-1,d=-1; float a0=0,a1=0,b0=0,b1=0; int64_t p=pos[i],e=pos[i+1],q=pos[i+1],f=pos[i+2];
  while(p+2<=e && q+2<=f){ int64_t c0=c+gap[p]+1,c1=c0+gap[p+1]+1; int64_t d0=d+gap[q]+1,d1=d0+gap[q+1]+1; a0+=val[p]*x[c0];a1+=val[p+1]*x[c1];b0+=val[q]*x[d0];b1+=val[q+1]*x[d1]; c=c1;d=d1;p+=2;q+=2;}
  for(;p<e;p++){c+=gap[p]+1;a0+=val[p]*x[c];} for(;q<f;q++){d+=gap[q]+1;b0+=val[q]*x[d];} y[i]=a0+a1; y[i+1]=b0+b1; } }

/* 8 gaps loaded as one u64 word, split with constant shifts; the column chain advances once per word */
static void kW(void){ for(int i=0;i<N;i++){ int64_t c=-1; float a0=0,a1=0,a2=0,a3=0; int64_t p=pos[i],e=pos[i+1];
  for(;p<e && (p&7);p++){ c+=gap[p]+1; a0+=val[p]*x[c]; }
  for(;p+8<=e;p+=8){ uint64_t w=*(uint64_t*)(gap+p); int64_t s0=(w&255)+1, s1=s0+((w>>8)&255)+1, s2=s1+((w>>16)&255)+1, s3=s2+((w>>24)&255)+1,
      s4=s3+((w>>32)&255)+1, s5=s4+((w>>40)&255)+1, s6=s5+((w>>48)&255)+1, s7=s6+(w>>56)+1;
    a0+=val[p]*x[c+s0]; a1+=val[p+1]*x[c+s1]; a2+=val[p+2]*x[c+s2]; a3+=val[p+3]*x[c+s3];
    a0+=val[p+4]*x[c+s4]; a1+=val[p+5]*x[c+s5]; a2+=val[p+6]*x[c+s6]; a3+=val[p+7]*x[c+s7]; c+=s7; }
  for(;p<e;p++){ c+=gap[p]+1; a0+=val[p]*x[c]; } y[i]=a0+a1+a2+a3; } }

/* 16 gaps decoded with a vector prefix sum, x gathered by two 8-lane vgatherdps */
static void kE(void){ /* decode 16 then gather ymm x2 */
 __m512i one=_mm512_set1_epi32(1);
 for(int i=0;i<N;i++){ int32_t c=-1; __m256 va=_mm256_setzero_ps(),vb=_mm256_setzero_ps(); float a0=0; int64_t p=pos[i],e=pos[i+1];
  for(;p+16<=e;p+=16){ __m512i g=_mm512_cvtepu8_epi32(_mm_loadu_si128((void*)(gap+p))); g=_mm512_add_epi32(g,one); g=scan16(g); g=_mm512_add_epi32(g,_mm512_set1_epi32(c));
    c=_mm_extract_epi32(_mm512_extracti32x4_epi32(g,3),3);
    __m256 x0=_mm256_i32gather_ps(x,_mm512_castsi512_si256(g),4); __m256 x1=_mm256_i32gather_ps(x,_mm512_extracti64x4_epi64(g,1),4);
    va=_mm256_fmadd_ps(_mm256_loadu_ps(val+p),x0,va); vb=_mm256_fmadd_ps(_mm256_loadu_ps(val+p+8),x1,vb);}
  for(;p<e;p++){c+=gap[p]+1;a0+=val[p]*x[c];} __m256 s=_mm256_add_ps(va,vb); float t[8]; _mm256_storeu_ps(t,s); for(int k=0;k<8;k++)a0+=t[k]; y[i]=a0; } }

/* 16 gaps decoded with a vector prefix sum, x gathered by one 16-lane vgatherdps */
static void kC(void){
 for(int i=0;i<N;i++){ int32_t c=-1; __m512 va=_mm512_setzero_ps(); float a0=0; int64_t p=pos[i],e=pos[i+1];
  __m512i one=_mm512_set1_epi32(1);
  for(;p+16<=e;p+=16){ __m512i g=_mm512_cvtepu8_epi32(_mm_loadu_si128((void*)(gap+p))); g=_mm512_add_epi32(g,one); g=scan16(g); g=_mm512_add_epi32(g,_mm512_set1_epi32(c)); c=_mm_cvtsi128_si32(_mm512_extracti32x4_epi32(g,3)>>0); c=_mm512_reduce_max_epi32(g);
    __m512 xv=_mm512_i32gather_ps(g,x,4); va=_mm512_fmadd_ps(_mm512_loadu_ps(val+p),xv,va);}
  for(;p<e;p++){c+=gap[p]+1;a0+=val[p]*x[c];} y[i]=a0+_mm512_reduce_add_ps(va); } }

/* 16 gaps decoded with a vector prefix sum; x read as the 64-float window after the running column and
   picked with two vpermt2ps (a gather where the 16 columns span more than 64) */
static void kP(void){ /* decode 16, permute from x window of 32/64, else gather */
 __m512i one=_mm512_set1_epi32(1); __m512i c32=_mm512_set1_epi32(32);
 for(int i=0;i<N;i++){ int32_t c=-1; __m512 va=_mm512_setzero_ps(); float a0=0; int64_t p=pos[i],e=pos[i+1];
  for(;p+16<=e;p+=16){ _mm_prefetch((char*)(val+p+PF),_MM_HINT_T0); _mm_prefetch((char*)(gap+p+PF),_MM_HINT_T0); __m512i g=_mm512_cvtepu8_epi32(_mm_loadu_si128((void*)(gap+p))); g=_mm512_add_epi32(g,one); g=scan16(g);
    int32_t span=_mm_extract_epi32(_mm512_extracti32x4_epi32(g,3),3); int32_t c0=c+1; __m512i ix=_mm512_sub_epi32(g,one);
    __m512 xv;
    if(span<=64 && c0+64<=N){ const float*w=x+c0; __m512 lo=_mm512_permutex2var_ps(_mm512_loadu_ps(w),ix,_mm512_loadu_ps(w+16)); __m512 hi=_mm512_permutex2var_ps(_mm512_loadu_ps(w+32),ix,_mm512_loadu_ps(w+48));
      xv=_mm512_mask_blend_ps(_mm512_cmpge_epi32_mask(ix,c32),lo,hi); }
    else xv=_mm512_i32gather_ps(_mm512_add_epi32(g,_mm512_set1_epi32(c)),x,4);
    c=c+span;
    va=_mm512_fmadd_ps(_mm512_loadu_ps(val+p),xv,va);}
  for(;p<e;p++){c+=gap[p]+1;a0+=val[p]*x[c];} y[i]=a0+_mm512_reduce_add_ps(va); } }

/* the decode alone (no x): what the gap and value streams cost */
static void kQ(void){ __m512i one=_mm512_set1_epi32(1);
 for(int i=0;i<N;i++){ int32_t c=-1; __m512 va=_mm512_setzero_ps(); int64_t p=pos[i],e=pos[i+1];
  for(;p+16<=e;p+=16){ __m512i g=_mm512_cvtepu8_epi32(_mm_loadu_si128((void*)(gap+p))); g=_mm512_add_epi32(g,one); g=scan16(g);
    int32_t span=_mm_extract_epi32(_mm512_extracti32x4_epi32(g,3),3); c+=span; va=_mm512_fmadd_ps(_mm512_loadu_ps(val+p),_mm512_cvtepi32_ps(g),va);}
  y[i]=_mm512_reduce_add_ps(va)+c; } }

/* a plain read of the gap and value streams */
static void kS(void){ /* stream read of gap+val */ __m512 a=_mm512_setzero_ps(); int64_t n=pos[N]; for(int64_t p=0;p+16<=n;p+=16){ a=_mm512_add_ps(a,_mm512_loadu_ps(val+p)); } __m512i b=_mm512_setzero_si512(); for(int64_t p=0;p+64<=n;p+=64) b=_mm512_add_epi8(b,_mm512_loadu_si512(gap+p)); y[0]=_mm512_reduce_add_ps(a)+_mm512_reduce_add_epi32(b); }

/* dense GEMV, AVX-512, two accumulators */
static void kG(void){ for(int i=0;i<N;i++){ __m512 a=_mm512_setzero_ps(),b=_mm512_setzero_ps(); for(int j=0;j<N;j+=32){a=_mm512_fmadd_ps(_mm512_loadu_ps(W+(size_t)i*N+j),_mm512_loadu_ps(x+j),a);b=_mm512_fmadd_ps(_mm512_loadu_ps(W+(size_t)i*N+j+16),_mm512_loadu_ps(x+j+16),b);} y[i]=_mm512_reduce_add_ps(_mm512_add_ps(a,b)); } }

#define PFD 1024
#define PFV(p) __builtin_prefetch(val+(p)+PFD,0,3); __builtin_prefetch(gap+(p)+PFD,0,3);
/* prefetching shapes (PFD entries ahead, values and gaps, once per iteration):
   16 entries per iteration, 16 partial sums, one shared column chain */
static void kU16(void){ for(int i=0;i<N;i++){ int64_t c=-1; float a[16]={0}; int64_t p=pos[i],e=pos[i+1];
  for(;p+16<=e;p+=16){ PFV(p) for(int u=0;u<16;u++){ c+=gap[p+u]+1; a[u]+=val[p+u]*x[c]; } }
  for(;p<e;p++){c+=gap[p]+1;a[0]+=val[p]*x[c];} float s=0; for(int u=0;u<16;u++)s+=a[u]; y[i]=s; } }
/* 2 rows, U entries each per iteration, prefetch both streams */
#define TWO(U) static void k2_##U(void){ for(int i=0;i+1<N;i+=2){ int64_t c=-1,d=-1; float a[U]={0},b[U]={0}; int64_t p=pos[i],e=pos[i+1],q=pos[i+1],f=pos[i+2]; \
  while(p+U<=e && q+U<=f){ PFV(p) PFV(q) for(int u=0;u<U;u++){ c+=gap[p+u]+1; a[u]+=val[p+u]*x[c]; d+=gap[q+u]+1; b[u]+=val[q+u]*x[d]; } p+=U;q+=U; } \
  for(;p+U<=e;p+=U){ PFV(p) for(int u=0;u<U;u++){ c+=gap[p+u]+1; a[u]+=val[p+u]*x[c]; } } \
  for(;q+U<=f;q+=U){ PFV(q) for(int u=0;u<U;u++){ d+=gap[q+u]+1; b[u]+=val[q+u]*x[d]; } } \
  for(;p<e;p++){c+=gap[p]+1;a[0]+=val[p]*x[c];} for(;q<f;q++){d+=gap[q]+1;b[0]+=val[q]*x[d];} \
  float s=0,t=0; for(int u=0;u<U;u++){s+=a[u];t+=b[u];} y[i]=s; y[i+1]=t; } }
TWO(2) TWO(4) TWO(8) TWO(16)
/* 4 rows, U each */
#define FOUR(U) static void k4_##U(void){ for(int i=0;i+3<N;i+=4){ int64_t c[4]={-1,-1,-1,-1}; float a[4][U]={{0}}; int64_t p[4],e[4]; for(int r=0;r<4;r++){p[r]=pos[i+r];e[r]=pos[i+r+1];} \
  while(p[0]+U<=e[0]&&p[1]+U<=e[1]&&p[2]+U<=e[2]&&p[3]+U<=e[3]){ for(int r=0;r<4;r++){PFV(p[r])} for(int u=0;u<U;u++) for(int r=0;r<4;r++){ c[r]+=gap[p[r]+u]+1; a[r][u]+=val[p[r]+u]*x[c[r]]; } for(int r=0;r<4;r++)p[r]+=U; } \
  for(int r=0;r<4;r++){ for(;p[r]<e[r];p[r]++){c[r]+=gap[p[r]]+1;a[r][0]+=val[p[r]]*x[c[r]];} float s=0; for(int u=0;u<U;u++)s+=a[r][u]; y[i+r]=s; } } }
FOUR(4) FOUR(8)
int main(int argc,char**argv){ double dens=argc>1?atof(argv[1]):0.5; srand(1);
 pos=malloc((N+1)*8); size_t cap=(size_t)N*N; gap=malloc(cap+64); val=malloc(cap*4+64); x=malloc(N*4); y=malloc(N*4); W=calloc(cap,4);
 size_t nnz=0; pos[0]=0;
 for(int i=0;i<N;i++){ int last=-1; for(int j=0;j<N;j++){ if(rand()<dens*RAND_MAX){ int g=j-last-1; while(g>255){gap[nnz]=255;val[nnz]=0;nnz++;g-=256;}
   gap[nnz]=g; val[nnz]=(float)rand()/RAND_MAX; W[(size_t)i*N+j]=val[nnz]; nnz++; last=j;} } pos[i+1]=nnz; }
 for(int j=0;j<N;j++)x[j]=(float)rand()/RAND_MAX;
 printf("%d x %d, density %.2f, %zu stored entries\n",N,N,dens,nnz);
 void (*ks[])(void)={kA,kA4,kF,kW,kE,kC,kP,kU16,k2_2,k2_4,k2_8,k2_16,k4_4,k4_8,kQ,kS,kG}; const char*nm[]={"chain","4 partial sums","2 rows","u64 gap words","gather 8x2","gather 16","window permute","pf 16 sums","pf 2 rows x2","pf 2 rows x4","pf 2 rows x8","pf 2 rows x16","pf 4 rows x4","pf 4 rows x8","decode only","stream read","dense GEMV"}; int K=17;
 static float ref[8192]; kA(); memcpy(ref,y,N*4);
 double best[32]; for(int k=0;k<K;k++)best[k]=1e9;
 for(int r=0;r<9;r++) for(int k=0;k<K;k++){ double t=now(); ks[k](); t=now()-t; if(t<best[k])best[k]=t;
   if(r==0 && k!=14 && k!=15){ float err=0; for(int i=0;i<N;i++){float d=y[i]-ref[i]; if(d<0)d=-d; if(d>err)err=d;} if(err>0.05f) printf("%s: wrong result (max err %g)\n",nm[k],err);} }
 for(int k=0;k<K;k++) printf("%-16s %7.2f ms  %.2fx dense\n",nm[k],best[k]*1e3,best[K-1]/best[k]);
 return 0; }
