# A perl workload for scripts/bench: hashes, arrays, strings, sorting and regular expressions,
# all allocation-heavy. Usage: perl bench/heap.pl N (work grows linearly with N). Prints a
# checksum that does not depend on the machine.
use strict;
use warnings;

my $n = shift // 20000;
my (%words, @recs);
my $seed = 12345;
sub rnd { $seed = ($seed * 1103515245 + 12345) % 2147483648; return $seed >> 16; }
for my $i (1 .. $n) {
    my $w = join '', map { chr(97 + rnd() % 26) } 1 .. (3 + rnd() % 8);
    $words{$w}++;
    push @recs, { id => $i, name => $w, tags => [ map { rnd() % 100 } 1 .. 4 ] };
}
my $sum = 0;
for my $r (sort { $a->{name} cmp $b->{name} || $a->{id} <=> $b->{id} } @recs) {
    $sum = ($sum * 31 + $r->{id} + $r->{tags}[2]) % 1000000007;
}
my $text = join ' ', map { $_->{name} } @recs;
my $vowels = () = $text =~ /[aeiou]{2,}/g;
my %byfirst;
push @{ $byfirst{ substr($_, 0, 1) } }, $_ for keys %words;
my $groups = join ',', map { $_ . scalar @{ $byfirst{$_} } } sort keys %byfirst;
(my $up = $text) =~ s/(\w+)/\u$1/g;
print "words ", scalar(keys %words), " sum $sum vowels $vowels len ", length($up), "\n$groups\n";
