import sys,collections,statistics
d=collections.defaultdict(list)
for line in open(sys.argv[1]):
    p=line.split()
    if len(p)<4: continue
    v=float(p[2].rstrip('us').rstrip('m')) * (1000 if p[2].endswith('ms') else 1)
    d[(p[3],p[1])].append(v)
paths=sorted({k[0] for k in d})
for path in paths:
    b=d[(path,'base')]; n=d[(path,'new')]
    if not b or not n: continue
    short=path.replace('&limit=10&columns=m:subject,m:from','').replace('/tables/mail/search?q=','')
    print(f"{short:28s} base med {statistics.median(b):6.0f} min {min(b):6.0f} | new med {statistics.median(n):6.0f} min {min(n):6.0f} | ratio med {statistics.median(n)/statistics.median(b):.2f} min {min(n)/min(b):.2f}  (n={len(b)})")
