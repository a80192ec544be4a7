# CPU seconds (user+sys) of a pid
awk '{print ($14+$15)/100}' /proc/$1/stat
